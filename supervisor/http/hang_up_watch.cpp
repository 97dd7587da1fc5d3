#include "supervisor/http/hang_up_watch.hpp"

#include <sys/socket.h>

#include <boost/asio/error.hpp>
#include <string_view>

#include "supervisor/http/response_head.hpp"

namespace sb::supervisor {

void HangUpWatch::start(std::function<void()> hung_up) {
  hung_up_ = std::move(hung_up);
  ++round_;
  wait_readable();
}

void HangUpWatch::stop() {
  ++round_;
  hung_up_ = nullptr;
  const bool cancel = waits_ > 0 && !streaming_;
  streaming_ = false;
  write_now_ = nullptr;
  if (!cancel) return;
  boost::system::error_code ignored;
  wire_.stream.socket().cancel(ignored);
}

void HangUpWatch::wait_readable() {
  ++waits_;
  wire_.stream.socket().async_wait(
      boost::asio::socket_base::wait_read,
      [this, keep = wire_.keep(), round = round_](const boost::system::error_code& error) {
        --waits_;
        if (round != round_ || error == boost::asio::error::operation_aborted) return;
        char byte;
        const auto peeked =
            ::recv(wire_.stream.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
        if (!error && peeked > 0) return;  // a pipelined request: answer this one first
        if (!error && peeked == 0) return probe_half_close();
        hang_up();
      });
}

// End of stream: ask the caller's kernel whether anyone is still there. Nothing else is
// being written while a call is pending without a stream, so the probe goes out at once;
// in a stream, the stream's own next write is the probe.
void HangUpWatch::probe_half_close() {
  if (streaming_) {
    if (write_now_) write_now_();
  } else {
    const auto sent = ::send(wire_.stream.socket().native_handle(), kContinueHead.data(),
                             kContinueHead.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (sent != static_cast<ssize_t>(kContinueHead.size())) return hang_up();
  }
  ++waits_;
  wire_.stream.socket().async_wait(
      boost::asio::socket_base::wait_error,
      [this, keep = wire_.keep(), round = round_](const boost::system::error_code& error) {
        --waits_;
        if (round != round_ || error == boost::asio::error::operation_aborted) return;
        hang_up();
      });
}

void HangUpWatch::hang_up() {
  if (auto hung_up = std::move(hung_up_)) hung_up();
}

}  // namespace sb::supervisor
