#include "supervisor/http/arriving_reply.hpp"

#include <algorithm>
#include <array>
#include <boost/asio/write.hpp>

namespace sb::supervisor {

ArrivingReply::ArrivingReply(const Wire& wire, HttpResponse response, const Framing& framing,
                             std::function<void(bool ok)> ended)
    : wire_(wire),
      body_(std::move(response.arriving)),
      lease_(std::move(response.lease)),
      ended_(std::move(ended)) {
  head_ = head_text(response, framing, response.body_head.size() + body_->size() - 1) +
          response.body_head;
}

void ArrivingReply::start() {
  // The follower keeps the connection until the body ends, which it always does.
  body_->follow([this, keep = wire_.keep()] { write_arrived(); });
  write_arrived();
}

// Arrived and not yet sent: none before the byte after the brace has arrived.
std::size_t ArrivingReply::unsent() const {
  const std::size_t arrived = body_->arrived();
  return arrived > body_sent_ ? arrived - body_sent_ : 0;
}

// One write of what has arrived and is not yet sent, the head first.
void ArrivingReply::write_arrived() {
  if (over_) return;
  if (body_->failed()) return end(false);  // a write under way is cut by the close
  if (writing_) return;
  const std::size_t ready = unsent();
  if (head_sent_ == head_.size() && ready == 0) {
    if (body_sent_ == body_->size()) end(true);
    return;  // the next arrival writes on
  }
  const std::array<boost::asio::const_buffer, 2> parts{
      boost::asio::buffer(head_.data() + head_sent_, head_.size() - head_sent_),
      boost::asio::buffer(body_->data() + body_sent_, ready)};
  writing_ = true;
  wire_.begin_write();
  boost::asio::async_write(
      wire_.stream, parts,
      [this, keep = wire_.keep()](const boost::system::error_code& error, std::size_t written) {
        wire_.end_write(error);
        writing_ = false;
        if (over_) return release();
        if (error) return end(false);
        const std::size_t of_head = std::min(written, head_.size() - head_sent_);
        head_sent_ += of_head;
        body_sent_ += written - of_head;
        write_arrived();
      });
}

void ArrivingReply::end(bool ok) {
  if (over_) return;
  over_ = true;
  if (!writing_) release();  // else once the write that points into the body has ended
  if (auto ended = std::move(ended_)) ended(ok);
}

// The reply has left, or never will: its bytes and its share of the budget go now, not
// when the connection's next request replaces this writer.
void ArrivingReply::release() {
  body_.reset();
  lease_ = {};
}

}  // namespace sb::supervisor
