#include "supervisor/http/resumable_streams.hpp"

#include <openssl/rand.h>

#include <array>
#include <charconv>

namespace sb::supervisor {

std::optional<EventPosition> parse_event_id(std::string_view id) {
  const std::size_t dash = id.rfind('-');
  if (dash == std::string_view::npos || dash == 0 || dash + 1 == id.size()) return std::nullopt;
  const std::string_view number = id.substr(dash + 1);
  EventPosition position{.stream = std::string(id.substr(0, dash))};
  const auto [end, error] =
      std::from_chars(number.data(), number.data() + number.size(), position.event);
  if (error != std::errc() || end != number.data() + number.size()) return std::nullopt;
  return position;
}

ResumableStream::ResumableStream(ResumableStreams& streams, std::string owner, Limits limits)
    : streams_(streams), owner_(std::move(owner)), limits_(limits) {}

SendEvent ResumableStream::events() {
  return [weak = weak_from_this()](std::string head, std::string body, std::string) {
    if (const auto self = weak.lock()) self->on_event(std::move(head), std::move(body));
  };
}

Respond ResumableStream::responses() {
  return [weak = weak_from_this()](HttpResponse response) {
    if (const auto self = weak.lock()) self->on_response(std::move(response));
  };
}

void ResumableStream::attach_first(Respond respond, SendEvent send) {
  connection_ = Connection{std::move(respond), std::move(send), ++generations_, false};
  if (limits_.poll_after.count() > 0) poll();
}

OnHangUp ResumableStream::hold(OnHangUp abandon) {
  if (over_ || response_) return {};
  abandon_ = std::move(abandon);
  // Paused before the handler was done starting it: no connection holds the stream now.
  if (!connection_) return {};
  return hang_up_for(connection_->generation);
}

OnHangUp ResumableStream::resume(Respond respond, SendEvent send, std::uint64_t after) {
  ++resumes_;
  // An earlier connection the caller has not hung up yet (as far as is known) gives way.
  if (connection_) pause_connection();
  if (resume_timer_) resume_timer_->cancel();
  send(std::string(), std::string(), std::string());
  for (const Kept& kept : kept_) {
    if (kept.number > after) send(std::string(), kept.text, event_id(kept.number));
  }
  if (response_) {
    // Given once, and the stream with it: the response's lease, and the place in the
    // computer's caps that it holds, go back once it is written (or its connection fails).
    HttpResponse response = std::move(*response_);
    end();
    respond(std::move(response));
    return {};
  }
  connection_ = Connection{std::move(respond), std::move(send), ++generations_, true};
  return hang_up_for(connection_->generation);
}

void ResumableStream::prime() {
  if (connection_ && !connection_->streaming) prime_connection();
}

HttpResponse ResumableStream::copy_of(const HttpResponse& response) {
  HttpResponse copy;
  copy.status = response.status;
  copy.headers = response.headers;
  copy.body = response.body;
  copy.body_head = response.body_head;
  copy.event_id = response.event_id;
  return copy;
}

std::string ResumableStream::event_id(std::uint64_t number) const {
  std::string id = id_;
  id += '-';
  id += std::to_string(number);
  return id;
}

// The connection's hang-up holds the stream: until the caller is given an id, nothing else
// does (docs/protocol.md, "Resumable streams").
OnHangUp ResumableStream::hang_up_for(std::uint64_t generation) {
  return [self = shared_from_this(), generation] { self->hung_up(generation); };
}

void ResumableStream::on_event(std::string head, std::string body) {
  if (over_) return;
  const std::uint64_t number = ++last_event_;
  if (connection_) send_to_connection(head, body, number);
  keep(number, head + body);
}

void ResumableStream::on_response(HttpResponse response) {
  if (over_ || response_) return;
  abandon_ = nullptr;  // the call is over: nothing left to cancel
  if (poll_timer_) poll_timer_->cancel();
  if (connection_ && !connection_->streaming) {
    // Plain JSON: the caller was given no id, so it cannot come back for it.
    Connection connection = std::move(*connection_);
    end();
    return connection.respond(std::move(response));
  }
  response.event_id = event_id(++last_event_);
  if (!connection_) {
    // Nobody to give it to until the caller comes back, within the resume window running.
    response_ = std::move(response);
    return;
  }
  // A caller gone without a word yet loses the response with its connection: a copy waits
  // for the caller's return for the resume window, as long as the budget has room.
  Connection connection = std::move(*connection_);
  connection_.reset();
  keep_response(response);
  if (response_) {
    await_resume();
  } else {
    end();
  }
  connection.respond(std::move(response));
}

void ResumableStream::keep_response(const HttpResponse& response) {
  if (response.arriving) return;  // written as it arrives: never whole here to copy
  auto lease = streams_.budget().reserve(response.body_head.size() + response.body.size());
  if (!lease) return;
  HttpResponse copy = copy_of(response);
  copy.lease = std::move(*lease);
  response_ = std::move(copy);
}

// Events beyond the count or the reply budget are not kept: a caller that comes back
// after them has lost them, as one that fell behind a live stream would.
void ResumableStream::keep(std::uint64_t number, std::string text) {
  if (limits_.replay_events == 0) return;
  if (kept_.size() >= limits_.replay_events) kept_.pop_front();
  auto lease = streams_.budget().reserve(text.size());
  if (!lease) return;
  kept_.push_back(Kept{number, std::move(text), std::move(*lease)});
}

void ResumableStream::send_to_connection(std::string_view head, std::string_view body,
                                         std::uint64_t number) {
  if (!connection_->streaming) prime_connection();
  connection_->send(std::string(head), std::string(body), event_id(number));
}

// The first event a connection sends makes its response an event stream, whose first
// event is the priming one: from then on the caller can name the stream, so the process's
// table holds it.
void ResumableStream::prime_connection() {
  connection_->streaming = true;
  if (!primed_) id_ = streams_.enlist(shared_from_this());
  primed_ = true;
  connection_->send(std::string(), std::string(), event_id(0));
}

void ResumableStream::hung_up(std::uint64_t generation) {
  if (over_ || !connection_ || connection_->generation != generation) return;
  connection_.reset();
  // A caller that was never given an id cannot come back: its hang-up cancels, as always.
  if (!primed_) return cancel_call();
  await_resume();
}

// A call with nothing to say yet ends its stream with the priming event alone, so that the
// caller frees its connection and polls (docs/protocol.md, "Resumable streams").
void ResumableStream::poll() {
  poll_timer_.emplace(streams_.executor(), limits_.poll_after);
  poll_timer_->async_wait([weak = weak_from_this()](const boost::system::error_code& error) {
    const auto self = weak.lock();
    if (error || !self || self->over_ || !self->connection_ || self->connection_->streaming) return;
    self->prime_connection();
    self->pause_connection();
    self->await_resume();
  });
}

void ResumableStream::pause_connection() {
  Connection connection = std::move(*connection_);
  connection_.reset();
  HttpResponse pause;
  pause.pauses_stream = true;
  connection.respond(std::move(pause));
}

void ResumableStream::await_resume() {
  if (!resume_timer_) resume_timer_.emplace(streams_.executor());
  resume_timer_->expires_after(limits_.resume_window);
  resume_timer_->async_wait([weak = weak_from_this()](const boost::system::error_code& error) {
    const auto self = weak.lock();
    if (error || !self || self->over_ || self->connection_) return;
    self->cancel_call();
  });
}

void ResumableStream::cancel_call() {
  OnHangUp abandon = std::move(abandon_);
  end();
  if (abandon) abandon();
}

void ResumableStream::end() {
  over_ = true;
  if (resume_timer_) resume_timer_->cancel();
  if (poll_timer_) poll_timer_->cancel();
  kept_.clear();
  connection_.reset();
  response_.reset();
  abandon_ = nullptr;
  if (primed_) streams_.forget(*this, id_);
}

ResumableStreams::ResumableStreams(boost::asio::any_io_executor executor, ReplyBudget& budget)
    : executor_(std::move(executor)), budget_(budget) {
  // A stream id is no secret (only its owner may resume it); a failed draw only makes ids
  // less unlike another process's.
  std::array<unsigned char, 8> bytes{};
  (void)RAND_bytes(bytes.data(), static_cast<int>(bytes.size()));
  static constexpr char kHex[] = "0123456789abcdef";
  for (const unsigned char byte : bytes) {
    prefix_.push_back(kHex[byte >> 4]);
    prefix_.push_back(kHex[byte & 0x0f]);
  }
  prefix_ += 's';
}

std::shared_ptr<ResumableStream> ResumableStreams::open(std::string owner,
                                                        ResumableStream::Limits limits,
                                                        Respond respond, SendEvent send) {
  auto stream = std::make_shared<ResumableStream>(*this, std::move(owner), limits);
  stream->attach_first(std::move(respond), std::move(send));
  return stream;
}

std::string ResumableStreams::enlist(std::shared_ptr<ResumableStream> stream) {
  std::string id = prefix_ + std::to_string(++enlisted_);
  streams_.emplace(id, std::move(stream));
  return id;
}

void ResumableStreams::forget(const ResumableStream& stream, const std::string& id) {
  streams_.erase(id);
  const auto notifications = notifications_.find(stream.owner());
  if (notifications != notifications_.end() && notifications->second.get() == &stream)
    notifications_.erase(notifications);
}

void ResumableStreams::prime_for_notifications(const std::shared_ptr<ResumableStream>& stream) {
  stream->prime();
  notifications_[stream->owner()] = stream;
}

std::optional<OnHangUp> ResumableStreams::take_up_notifications(const std::string& owner,
                                                                Respond respond, SendEvent send) {
  const auto found = notifications_.find(owner);
  if (found == notifications_.end() || !found->second->detached() || !found->second->resumable())
    return std::nullopt;
  const std::shared_ptr<ResumableStream> stream = found->second;
  return stream->take_up(std::move(respond), std::move(send));
}

std::optional<OnHangUp> ResumableStreams::resume(const std::string& owner,
                                                 const EventPosition& from, Respond respond,
                                                 SendEvent send) {
  const auto found = streams_.find(from.stream);
  if (found == streams_.end() || found->second->owner() != owner || !found->second->resumable())
    return std::nullopt;
  const std::shared_ptr<ResumableStream> stream = found->second;
  return stream->resume(std::move(respond), std::move(send), from.event);
}

}  // namespace sb::supervisor
