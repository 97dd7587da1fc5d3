// A computer's socket as the worker's WebSocket stream reads and writes it, so that a
// session can leave one stream object (one worker) and go on in another without the
// computer noticing: what switching the switchboard in place without closing a computer
// is built on (docs/architecture.md, "Switching").
//
// Beast cannot take_up_call a WebSocket that is already open, nor give back what it read ahead.
// So this socket hands its reader at most the rest of the frame in progress: whatever else
// came with it waits here, and between two messages nothing of the computer's is inside
// the stream. At such a boundary `park()` stops the reader for good, with exactly the
// bytes read from the socket and not yet handed on left here. A new stream sessions_taken_up from
// them with a handshake replayed locally: its 101 is swallowed here (`swallow_writes`), and
// the computer only ever saw one.
//
// Frames are read as RFC 6455 §5.2 lays them out; a malformed one is handed on as it is,
// for the stream to refuse. Every byte read through it is taken for a frame: the upgrade
// request reaches the stream apart (the supervisor read it; `accept` is given it), and
// what came after it is `already_read`.
#pragma once

#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core/buffers_prefix.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/websocket/teardown.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace sb::worker {

// The upgrade request a resumed stream replays to itself, the least RFC 6455 §4.2.1 asks.
inline constexpr std::string_view kReplayedUpgrade =
    "GET / HTTP/1.1\r\nHost: switchboard\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    "Sec-WebSocket-Key: AAAAAAAAAAAAAAAAAAAAAA==\r\nSec-WebSocket-Version: 13\r\n\r\n";

class SessionSocket {
 public:
  using executor_type = boost::asio::ip::tcp::socket::executor_type;

  // `already_read`: bytes of the computer's read from the socket before, from a frame
  // boundary on (a session taken up).
  explicit SessionSocket(boost::asio::ip::tcp::socket socket, std::string already_read = {})
      : socket_(std::move(socket)), incoming_(std::move(already_read)) {}

  executor_type get_executor() { return socket_.get_executor(); }
  boost::asio::ip::tcp::socket& socket() { return socket_; }

  // While true, what the stream writes is dropped as if sent: the 101 of a replayed
  // handshake.
  void swallow_writes(bool swallow) { swallow_writes_ = swallow; }

  // No frame is part way through its reader, and no message part way through its frames.
  bool at_message_boundary() const { return frame_left_ == 0 && !inside_message_; }
  // Bytes of data frames handed to the reader so far (control frames' not counted): while
  // it stays the same, the reader has put nothing into the buffer it reads messages into.
  std::uint64_t data_bytes_handed() const { return data_bytes_handed_; }
  // When the header of the first frame of the message being read (or last read) was all
  // here, in Unix time (nanoseconds): its first byte, as near as the reader can tell.
  std::uint64_t message_began_unix_nanos() const { return message_began_unix_nanos_; }

  // Stops the reader at its next message boundary: when it next asks for a frame there
  // (at once, if it is waiting for one), its read is abandoned, never completed, and
  // `stopped` runs (posted). Nothing read from the socket is lost: a read waiting on the
  // socket is cancelled and what it brought stays here. Only while no write is under way
  // (writes_in_flight), since a cancel would cut a write short too.
  void park(std::function<void()> stopped);
  bool parked() const { return parked_; }
  // Takes park() back before the reader stopped: it reads on as before.
  void unpark() {
    park_requested_ = false;
    stopped_ = nullptr;
  }
  // Writes the stream has started and not seen complete (its own pongs and closes
  // included); `done` runs (once) when none is left.
  int writes_in_flight() const { return writes_in_flight_; }
  void when_writes_done(std::function<void()> done) { writes_done_ = std::move(done); }
  // After park(): the bytes read from the socket and never handed on, from a frame
  // boundary on.
  std::string take_unread() { return std::exchange(incoming_, {}); }

  template <typename MutableBuffers, typename Token>
  auto async_read_some(const MutableBuffers& buffers, Token&& token) {
    return boost::asio::async_initiate<Token, void(boost::beast::error_code, std::size_t)>(
        [this](auto handler, const MutableBuffers& into) {
          this->read(into, std::move(handler), /*in_completion=*/false);
        },
        token, buffers);
  }

  template <typename ConstBuffers, typename Token>
  auto async_write_some(const ConstBuffers& buffers, Token&& token) {
    return boost::asio::async_initiate<Token, void(boost::beast::error_code, std::size_t)>(
        [this](auto handler, const ConstBuffers& from) {
          ++writes_in_flight_;
          auto counted = [this, handler = std::move(handler)](boost::beast::error_code error,
                                                              std::size_t size) mutable {
            --writes_in_flight_;
            handler(error, size);
            if (writes_in_flight_ == 0 && writes_done_) std::exchange(writes_done_, nullptr)();
          };
          if (!swallow_writes_) return socket_.async_write_some(from, std::move(counted));
          boost::asio::post(
              socket_.get_executor(),
              [counted = std::move(counted), size = boost::asio::buffer_size(from)]() mutable {
                counted(boost::beast::error_code(), size);
              });
        },
        token, buffers);
  }

 private:
  // The next frame's header, once it is all in `incoming_`: its length with the payload,
  // and whether it ends a message.
  struct FrameStart {
    std::size_t size = 0;
    bool control = false;
    bool final = false;
  };
  std::optional<FrameStart> frame_start() const;

  // At most the rest of the frame in progress, from `incoming_` or straight from the
  // socket; at a frame's start, its header first gathered here. A handler is never run
  // inside the call that started the read: only once a read of the socket has completed.
  template <typename MutableBuffers, typename Handler>
  void read(const MutableBuffers& into, Handler handler, bool in_completion) {
    // The reader's handler is dropped here, never run: the stream it belongs to is done.
    if (park_requested_ && at_message_boundary()) return stop_reading();
    if (frame_left_ == 0 && !begin_frame()) return gather(into, std::move(handler));
    if (!incoming_.empty()) {
      const std::size_t size = boost::asio::buffer_copy(
          boost::beast::buffers_prefix(frame_left_, into), boost::asio::buffer(incoming_));
      incoming_.erase(0, size);
      handed(size);
      if (in_completion) return handler(boost::beast::error_code(), size);
      return boost::asio::post(socket_.get_executor(),
                               [handler = std::move(handler), size]() mutable {
                                 handler(boost::beast::error_code(), size);
                               });
    }
    socket_.async_read_some(boost::beast::buffers_prefix(frame_left_, into),
                            [this, handler = std::move(handler)](boost::beast::error_code error,
                                                                 std::size_t size) mutable {
                              handed(size);
                              handler(error, size);
                            });
  }

  // More bytes for a header that has not all arrived.
  template <typename MutableBuffers, typename Handler>
  void gather(const MutableBuffers& into, Handler handler) {
    const std::size_t had = incoming_.size();
    incoming_.resize(had + kGatherBytes);
    gathering_ = true;
    socket_.async_read_some(boost::asio::buffer(incoming_.data() + had, kGatherBytes),
                            [this, into, had, handler = std::move(handler)](
                                boost::beast::error_code error, std::size_t size) mutable {
                              gathering_ = false;
                              incoming_.resize(had + size);
                              // Cancelled by park(): the reader stops at the boundary.
                              const bool parking =
                                  park_requested_ &&
                                  (!error || error == boost::asio::error::operation_aborted);
                              if (error && !parking) return handler(error, std::size_t{0});
                              read(into, std::move(handler), /*in_completion=*/true);
                            });
  }

  // Starts the frame at the head of `incoming_`, when its header is all there.
  bool begin_frame();
  void handed(std::size_t size) {
    frame_left_ -= size;
    if (!frame_control_) data_bytes_handed_ += size;
  }
  // The reader has reached the boundary park() waits for.
  void stop_reading();

  static constexpr std::size_t kGatherBytes = 16 * 1024;

  boost::asio::ip::tcp::socket socket_;
  std::string incoming_;         // read from the socket, not yet handed on
  std::size_t frame_left_ = 0;   // of the frame in progress, not yet handed on
  bool inside_message_ = false;  // a data frame without FIN was handed on
  bool frame_control_ = false;   // the frame in progress is a control frame
  std::uint64_t data_bytes_handed_ = 0;
  std::uint64_t message_began_unix_nanos_ = 0;
  bool swallow_writes_ = false;
  bool gathering_ = false;  // a read for a frame's header is waiting on the socket
  int writes_in_flight_ = 0;
  bool park_requested_ = false;
  std::function<void()> writes_done_;
  std::function<void()> stopped_;  // what park() was given
  bool parked_ = false;
};

// What Beast's WebSocket stream calls to close the socket under it.
void beast_close_socket(SessionSocket& socket);
void teardown(boost::beast::role_type role, SessionSocket& socket, boost::beast::error_code& error);

template <typename Handler>
void async_teardown(boost::beast::role_type role, SessionSocket& socket, Handler&& handler) {
  boost::beast::websocket::async_teardown(role, socket.socket(), std::forward<Handler>(handler));
}

}  // namespace sb::worker
