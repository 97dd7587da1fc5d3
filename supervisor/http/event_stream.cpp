#include "supervisor/http/event_stream.hpp"

#include <algorithm>
#include <boost/asio/write.hpp>

namespace sb::supervisor {
namespace {

constexpr std::size_t kArrivingPartBytes = 256 * 1024;

}  // namespace

EventStream::EventStream(const Wire& wire, ReplyBudget& budget, std::function<void(bool ok)> ended,
                         Caps caps)
    : wire_(wire),
      budget_(budget),
      ended_(std::move(ended)),
      caps_(caps),
      keep_alive_timer_(wire.stream.get_executor()) {}

void EventStream::open(const Framing& framing) {
  queue(head_text(HttpResponse{200,
                               {{"Content-Type", "text/event-stream"},
                                {"Cache-Control", "no-cache"},
                                {"X-Accel-Buffering", "no"}}},
                  framing, std::nullopt));
  schedule_keep_alive();
}

void EventStream::resume() {
  schedule_keep_alive();
}

void EventStream::event(std::string_view head, std::string_view body, std::string_view id) {
  if (finishing_ || over_) return;
  // A caller this far behind loses messages rather than growing the queue, and so do all
  // callers when replies waiting to be read fill the process's budget.
  const std::size_t size = head.size() + body.size();
  if (pieces_.size() >= caps_.max_events || queued_bytes_ + size > caps_.max_bytes) return;
  auto lease = budget_.reserve(size);
  if (!lease) return;
  queue(chunk(sse_event(head, body, id)), std::move(*lease));
}

void EventStream::prime(std::string_view id) {
  if (finishing_ || over_) return;
  queue(chunk(priming_event(id)));
}

void EventStream::finish(HttpResponse response) {
  if (finishing_ || over_) return;
  finishing_ = true;
  keep_alive_timer_.cancel();
  if (response.pauses_stream) return queue(std::string(kLastChunk));
  if (!response.arriving) {
    queue(chunk(sse_event(response.body_head, response.body, response.event_id)),
          std::move(response.lease));
    return queue(std::string(kLastChunk));
  }
  Arrival arrival{.body = std::move(response.arriving), .lease = std::move(response.lease)};
  arrival.opening = event_opening(response.event_id);
  arrival.data.append(arrival.opening, response.body_head);
  arrival_ = std::move(arrival);
  // The body always ends, whole or failed (a worker that stops half-way is expelled); the
  // follower keeps the connection until it does.
  arrival_->body->follow([this, keep = wire_.keep()] {
    if (!arrival_) return;
    if (arrival_->body->failed()) return end(false);
    if (!writing_) queue_arriving_part();
  });
  if (arrival_->body->failed()) return end(false);
  if (!writing_) queue_arriving_part();  // else once the caller has taken what is under way
}

void EventStream::keep_alive_now() {
  if (finishing_ || over_ || !pieces_.empty()) return;
  queue(chunk(": keep-alive\n\n"));
}

void EventStream::stop() {
  keep_alive_timer_.cancel();
}

void EventStream::schedule_keep_alive() {
  keep_alive_timer_.expires_after(caps_.keep_alive);
  keep_alive_timer_.async_wait([this, keep = wire_.keep()](const boost::system::error_code& error) {
    if (error || finishing_ || over_) return;
    keep_alive_now();
    schedule_keep_alive();
  });
}

void EventStream::queue(std::string bytes, ReplyBudget::Lease lease) {
  queued_bytes_ += bytes.size();
  pieces_.push_back(Piece{std::move(bytes), std::move(lease)});
  if (!writing_) write_next();
}

void EventStream::write_next() {
  if (over_) return;
  if (pieces_.empty()) {
    if (arrival_) return queue_arriving_part();
    if (finishing_) return end(true);
    if (when_idle_) when_idle_();
    return;
  }
  writing_ = true;
  wire_.begin_write();
  boost::asio::async_write(
      wire_.stream, boost::asio::buffer(pieces_.front().bytes),
      [this, keep = wire_.keep()](const boost::system::error_code& error, std::size_t) {
        wire_.end_write(error);
        writing_ = false;
        queued_bytes_ -= pieces_.front().bytes.size();
        pieces_.pop_front();
        if (error) {
          pieces_.clear();
          queued_bytes_ = 0;
          return end(false);
        }
        write_next();
      });
}

// The next part of the arriving response that has come and is not yet framed.
void EventStream::queue_arriving_part() {
  Arrival& arrival = *arrival_;
  const std::size_t arrived = arrival.body->arrived();
  const std::size_t ready = arrived > arrival.sent ? arrived - arrival.sent : 0;
  const std::size_t take = std::min(ready, kArrivingPartBytes);
  std::string part = std::move(arrival.opening);
  arrival.opening.clear();
  arrival.data.append(part, {arrival.body->data() + arrival.sent, take});
  arrival.sent += take;
  const bool last = arrival.sent == arrival.body->size();
  if (last) part += "\n\n";
  if (part.empty()) return;  // the next arrival comes back here
  if (!last) return queue(chunk(part));
  // The reply keeps its lease (and its place in the caps) until its last part is written.
  auto lease = std::move(arrival.lease);
  arrival_.reset();
  queue(chunk(part), std::move(lease));
  queue(std::string(kLastChunk));
}

void EventStream::end(bool ok) {
  if (over_) return;
  over_ = true;
  keep_alive_timer_.cancel();
  arrival_.reset();
  if (auto ended = std::move(ended_)) ended(ok);
}

}  // namespace sb::supervisor
