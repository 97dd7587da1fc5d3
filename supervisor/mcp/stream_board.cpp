#include "supervisor/mcp/stream_board.hpp"

#include <boost/asio/post.hpp>

namespace sb::supervisor {

std::optional<std::uint64_t> StreamBoard::open(const StreamKey& key, Sink sink) {
  if (full(key.caller)) return std::nullopt;
  const std::uint64_t id = next_id_++;
  if (!streams_.try_emplace(key, Open{id, std::move(sink)}).second) return std::nullopt;
  ++held_[key.caller];
  return id;
}

void StreamBoard::close(const StreamKey& key, std::uint64_t id) {
  const auto found = streams_.find(key);
  if (found == streams_.end() || found->second.id != id) return;
  streams_.erase(found);
  const auto held = held_.find(key.caller);
  if (held != held_.end() && --held->second == 0) held_.erase(held);
}

bool StreamBoard::full(const std::string& caller) const {
  return held_by(caller) >= max_per_caller_;
}

std::size_t StreamBoard::held_by(const std::string& caller) const {
  const auto held = held_.find(caller);
  return held == held_.end() ? 0 : held->second;
}

std::size_t StreamBoard::broadcast(std::string_view computer, std::string message) {
  std::size_t open = 0;
  for (auto at = streams_.lower_bound(StreamKey{std::string(computer), {}, {}});
       at != streams_.end() && at->first.computer == computer; ++at)
    ++open;
  if (open == 0 || waiting_.size() >= kMaxWaitingBroadcasts) return 0;
  waiting_.push_back(Broadcast{std::string(computer), std::move(message), std::nullopt});
  schedule();
  return open;
}

void StreamBoard::schedule() {
  if (scheduled_ || waiting_.empty()) return;
  scheduled_ = true;
  boost::asio::post(executor_, [this, alive = std::weak_ptr<bool>(alive_)] {
    if (alive.expired()) return;
    scheduled_ = false;
    deliver_some();
    schedule();
  });
}

// Up to kDeliveriesPerTurn sink calls, oldest broadcast first; a stream opened since its
// broadcast may get it too, one closed meanwhile does not. Each stream is looked up from
// the last one served, so that a sink that opens or closes streams moves nothing under it.
void StreamBoard::deliver_some() {
  std::size_t calls = 0;
  while (!waiting_.empty() && calls < kDeliveriesPerTurn) {
    Broadcast& next = waiting_.front();
    const auto at = next.after ? streams_.upper_bound(*next.after)
                               : streams_.lower_bound(StreamKey{next.computer, {}, {}});
    if (at == streams_.end() || at->first.computer != next.computer) {
      waiting_.pop_front();
      continue;
    }
    next.after = at->first;
    ++calls;
    at->second.sink(next.message);
  }
}

bool StreamBoard::deliver(const StreamKey& key, std::string message) const {
  const auto found = streams_.find(key);
  if (found == streams_.end()) return false;
  found->second.sink(std::move(message));
  return true;
}

}  // namespace sb::supervisor
