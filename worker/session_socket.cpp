#include "worker/session_socket.hpp"

#include "base/unix_time.hpp"

namespace sb::worker {

std::optional<SessionSocket::FrameStart> SessionSocket::frame_start() const {
  const auto byte = [this](std::size_t at) { return static_cast<std::uint8_t>(incoming_[at]); };
  if (incoming_.size() < 2) return std::nullopt;
  const std::uint8_t opcode = byte(0) & 0x0f;
  const bool masked = (byte(1) & 0x80) != 0;
  std::uint64_t payload = byte(1) & 0x7f;
  std::size_t header = 2;
  if (payload >= 126) {
    const std::size_t extended = payload == 126 ? 2 : 8;
    if (incoming_.size() < header + extended) return std::nullopt;
    payload = 0;
    for (std::size_t i = 0; i < extended; ++i) payload = payload << 8 | byte(header + i);
    header += extended;
  }
  if (masked) header += 4;
  return FrameStart{.size = header + static_cast<std::size_t>(payload),
                    .control = (opcode & 0x08) != 0,
                    .final = (byte(0) & 0x80) != 0};
}

bool SessionSocket::begin_frame() {
  const auto frame = frame_start();
  if (!frame) return false;
  frame_left_ = frame->size;
  frame_control_ = frame->control;
  // Control frames may come between the frames of a message and belong to none.
  if (frame->control) return true;
  if (!inside_message_) message_began_unix_nanos_ = unix_nanos_now();
  inside_message_ = !frame->final;
  return true;
}

void SessionSocket::park(std::function<void()> stopped) {
  park_requested_ = true;
  stopped_ = std::move(stopped);
  // Waiting for a header at a boundary: the read gives back what it has and, finding the
  // socket parking, goes no further.
  if (gathering_ && at_message_boundary()) {
    boost::beast::error_code ignored;
    socket_.cancel(ignored);
  }
}

void SessionSocket::stop_reading() {
  if (parked_) return;
  parked_ = true;
  boost::asio::post(socket_.get_executor(), std::move(stopped_));
}

// A shutdown first: the supervisor holds a copy of the socket (docs/architecture.md,
// "Switching"), so closing this one alone would not end the connection.
void beast_close_socket(SessionSocket& socket) {
  boost::beast::error_code ignored;
  socket.socket().shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
  socket.socket().close(ignored);
}

void teardown(boost::beast::role_type role, SessionSocket& socket,
              boost::beast::error_code& error) {
  boost::beast::websocket::teardown(role, socket.socket(), error);
}

}  // namespace sb::worker
