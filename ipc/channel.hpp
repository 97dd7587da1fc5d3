// A framed, fd-capable stream Unix socket between the supervisor and one worker.
//
// Reads and writes go through recvmsg/sendmsg on the non-blocking descriptor, driven by
// Asio readiness waits, because Asio's own socket operations cannot carry SCM_RIGHTS.
// Received descriptors are queued and handed to the frame that declared one, in order.
//
// The supervisor's end of a worker's channel takes no descriptors at all: a worker has none
// to give, and one it smuggles in (SCM_RIGHTS on any frame) is closed the moment it arrives
// and ends the channel as a violation (docs/architecture.md, "Trust boundaries").
#pragma once

#include <sys/uio.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "ipc/frame.hpp"

namespace sb::ipc {

// Whether the peer may pass descriptors on this channel.
enum class Descriptors { kAccepted, kRefused };

class Channel : public std::enable_shared_from_this<Channel> {
 public:
  using FrameHandler = std::function<void(Frame&&)>;
  // `violation` says how the peer broke the framing (a malformed header, a descriptor it
  // may not send or did not send); empty when the peer simply closed or failed.
  using ClosedHandler = std::function<void(const std::string& violation)>;

  Channel(boost::asio::io_context& io, UniqueFd socket,
          Descriptors descriptors = Descriptors::kAccepted);

  // Starts reading. `on_closed` runs once, after EOF, an error or a malformed frame; not
  // after close(), which is the owner's own doing.
  void start(FrameHandler on_frame, ClosedHandler on_closed);
  void send(Frame frame);
  // Queues a frame that may wait up to kDeferLimit for the next send() to carry it, in
  // order: a notice the peer needs soon but not at once costs no wake-up of its own while
  // other frames are flowing (docs/architecture.md, "The channel").
  void send_deferred(Frame frame);
  static constexpr std::chrono::milliseconds kDeferLimit{2};
  // Runs `then` once every frame queued so far has been written, or the channel is closed.
  void flush(std::function<void()> then);
  void close();
  bool is_open() const { return !closed_; }
  // Delivers every frame already in the socket, without waiting. For a peer that has
  // exited: what it said last must not be lost to the order in which its exit and its
  // bytes are noticed.
  void drain();

 private:
  struct Outgoing {
    WireHeader header{};
    Frame frame;
    std::size_t sent = 0;
    std::size_t total() const { return sizeof header + frame.meta.size() + frame.body.size(); }
  };

  enum class ReadResult { kRead, kNothingYet, kClosed };

  void wait_readable();
  void on_readable();
  ReadResult read_some();
  bool consume_staged();
  bool begin_frame();
  void finish_frame();
  long receive(char* destination, std::size_t size);
  void queue(Frame frame);
  void schedule_write();
  void arm_deferred_write();
  void write_pending();
  long send_some();
  void mark_sent(std::size_t sent);
  void fail();
  void violate(std::string violation);
  void stop_writing();

  boost::asio::local::stream_protocol::socket socket_;
  FrameHandler on_frame_;
  ClosedHandler on_closed_;
  bool closed_ = false;
  bool write_stopped_ = false;  // the peer takes no more frames; its own are still read
  const Descriptors descriptors_;
  std::string violation_;

  // Reading state.
  std::vector<char> staging_;
  std::size_t staged_begin_ = 0;
  std::size_t staged_end_ = 0;
  WireHeader header_{};
  std::size_t header_filled_ = 0;
  bool in_frame_ = false;
  Frame incoming_;
  std::size_t payload_filled_ = 0;  // bytes of meta + body received so far
  std::deque<UniqueFd> received_fds_;

  // Writing state.
  std::deque<Outgoing> outbox_;
  bool write_scheduled_ = false;
  bool waiting_writable_ = false;
  boost::asio::steady_timer deferred_timer_;
  bool deferred_armed_ = false;
  std::vector<std::function<void()>> flush_waiters_;
};

// A connected pair of non-blocking, close-on-exec stream Unix sockets.
std::pair<UniqueFd, UniqueFd> make_socket_pair();

// One sendmsg of `parts`, with `fds` (if any) in one SCM_RIGHTS message: the bytes sent,
// or -1 with errno. The channel's own sending; tests and fuzz targets that must forge what
// a Channel never sends use it too.
long send_with_descriptors(int socket, std::span<const iovec> parts, std::span<const int> fds,
                           int flags);

}  // namespace sb::ipc
