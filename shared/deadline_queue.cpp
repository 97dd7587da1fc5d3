#include "shared/deadline_queue.hpp"

#include <boost/asio/steady_timer.hpp>
#include <map>
#include <optional>

namespace sb {

// Shared with the timer's handler by a weak pointer, so that a wake-up already on its way
// when the queue goes finds nothing to touch.
struct DeadlineQueue::State : std::enable_shared_from_this<State> {
  using Key = std::pair<Clock::time_point, std::uint64_t>;

  explicit State(boost::asio::io_context& io) : timer(io) {}

  // Only ever moves the timer earlier: a later entry is picked up when the timer fires.
  void arm_for(Clock::time_point at) {
    if (armed_for && *armed_for <= at) return;
    armed_for = at;
    timer.expires_at(at);
    timer.async_wait([weak = weak_from_this()](const boost::system::error_code& error) {
      if (error) return;
      if (const auto self = weak.lock()) self->expire_due();
    });
  }

  void expire_due() {
    armed_for.reset();
    const auto now = Clock::now();
    while (!closed && !entries.empty() && entries.begin()->first.first <= now) {
      auto entry = entries.extract(entries.begin());
      entry.mapped()();
    }
    if (!closed && !entries.empty()) arm_for(entries.begin()->first.first);
  }

  std::map<Key, std::function<void()>> entries;
  boost::asio::steady_timer timer;
  std::optional<Clock::time_point> armed_for;  // the pending wait's expiry
  std::uint64_t next_key = 1;
  bool closed = false;
};

DeadlineQueue::DeadlineQueue(boost::asio::io_context& io) : state_(std::make_shared<State>(io)) {}

DeadlineQueue::~DeadlineQueue() {
  state_->closed = true;
  state_->timer.cancel();
  // Moved out first: destroying a callback may withdraw other entries of this queue.
  auto entries = std::move(state_->entries);
  state_->entries.clear();
}

DeadlineQueue::Deadline DeadlineQueue::add(Clock::time_point at, std::function<void()> on_expired) {
  const std::uint64_t key = state_->next_key++;
  state_->entries.emplace(State::Key{at, key}, std::move(on_expired));
  state_->arm_for(at);
  return Deadline(state_, at, key);
}

std::size_t DeadlineQueue::size() const {
  return state_->entries.size();
}

DeadlineQueue::Deadline::Deadline(Deadline&& other) noexcept
    : state_(std::move(other.state_)), at_(other.at_), key_(other.key_) {
  other.state_.reset();
}

DeadlineQueue::Deadline& DeadlineQueue::Deadline::operator=(Deadline&& other) noexcept {
  if (this != &other) {
    reset();
    state_ = std::move(other.state_);
    at_ = other.at_;
    key_ = other.key_;
    other.state_.reset();
  }
  return *this;
}

void DeadlineQueue::Deadline::move_to(Clock::time_point at) {
  const auto state = state_.lock();
  if (!state || state->closed) return;
  auto entry = state->entries.extract(State::Key{at_, key_});
  if (entry.empty()) return;
  entry.key() = State::Key{at, key_};
  at_ = at;
  state->entries.insert(std::move(entry));
  state->arm_for(at);
}

void DeadlineQueue::Deadline::reset() {
  if (const auto state = state_.lock()) state->entries.erase(State::Key{at_, key_});
  state_.reset();
}

bool DeadlineQueue::Deadline::pending() const {
  const auto state = state_.lock();
  return state && state->entries.contains(State::Key{at_, key_});
}

}  // namespace sb
