// A framed channel between the supervisor and one worker, over two stream Unix sockets.
//
// Frames cross one socket both ways and are read with Asio's own reads, which try the
// socket first and keep its registration with epoll: no re-arm per read. Asio's reads
// cannot carry SCM_RIGHTS, so descriptors cross the other socket, one way only (supervisor
// to worker), each as one byte with its SCM_RIGHTS, sent before the first byte of the frame
// that declares it: when that frame is complete, its descriptor is already waiting.
//
// The supervisor's end takes no descriptors at all: it never reads the descriptor socket
// (shut for reading), refuses a frame that declares one, and reads frames with no room for
// SCM_RIGHTS, so the kernel closes anything a worker smuggles there before the supervisor
// could hold it (docs/architecture.md, "Trust boundaries").
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

// What one end does with descriptors: the supervisor's end sends them, a worker's receives.
enum class Descriptors { kSent, kReceived };

// One end of a channel: its frame socket and its descriptor socket.
struct ChannelEnd {
  base::UniqueFd frames;
  base::UniqueFd descriptors;
  Descriptors role = Descriptors::kSent;
};

// A new channel's two ends: `sender` passes descriptors to `receiver`. The descriptor
// socket is shut in the other direction, so the receiver's sends there fail (EPIPE).
struct ChannelEnds {
  ChannelEnd sender;
  ChannelEnd receiver;
};
ChannelEnds make_channel();

class Channel : public std::enable_shared_from_this<Channel> {
 public:
  using FrameHandler = std::function<void(Frame&&)>;
  // `violation` says how the peer broke the framing (a malformed header, a descriptor it
  // may not send or did not send); empty when the peer simply closed or failed.
  using ClosedHandler = std::function<void(const std::string& violation)>;

  Channel(boost::asio::io_context& io, ChannelEnd end);
  ~Channel();
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  // Starts reading. `on_closed` runs once, after EOF, an error or a malformed frame; not
  // after close(), which is the owner's own doing.
  void start(FrameHandler on_frame, ClosedHandler on_closed);
  // From now on, a frame whose body is at least `at_least` bytes and that `wanted` picks
  // (seeing the frame with its meta, its body not yet read) goes to on_frame as soon as
  // its meta is in: `body` empty, `arriving` set and filled as the bytes come, failed if
  // the channel closes first (docs/architecture.md, "Large replies").
  using BodyChooser = std::function<bool(const Frame& without_body)>;
  void hand_over_large_bodies(std::size_t at_least, BodyChooser wanted);
  void send(Frame frame);
  // Queues a frame that may wait up to kDeferLimit for the next send() to carry it, in
  // order: a notice the peer needs soon but not at once costs no wake-up of its own while
  // other frames are flowing (docs/architecture.md, "The channel").
  void send_deferred(Frame frame);
  static constexpr std::chrono::milliseconds kDeferLimit{2};
  // Runs `then` once every frame queued so far has been written, or the channel is closed.
  void flush(std::function<void()> then);
  // Bytes of frames queued and not yet written: what this end holds for its peer.
  std::size_t queued_bytes() const { return queued_bytes_; }
  // Runs `then` once queued_bytes() is at most `bytes` (at once if it is), or the channel
  // is closed: a producer waits for room instead of queueing without bound.
  void when_queued_at_most(std::size_t bytes, std::function<void()> then);
  void close();
  bool is_open() const { return !closed_; }
  // For a watch on a peer that takes too long over a frame: whether a frame is begun and
  // not whole, and how many frames were ever begun (a frame begins with its first byte).
  bool inside_frame() const { return in_frame_ || header_filled_ > 0; }
  std::uint64_t frames_started() const { return frames_started_; }
  // Delivers every frame already in the socket, then runs `then` (also when the channel
  // is or gets closed). For a peer that has exited: what it said last must not be lost to
  // the order in which its exit and its bytes are noticed.
  void drain(std::function<void()> then);

 private:
  struct Outgoing {
    WireHeader header{};
    Frame frame;
    std::size_t sent = 0;
    std::size_t total() const { return sizeof header + frame.meta.size() + frame.body.size(); }
  };

  // Where the next read lands: straight into a large body, or into the staging buffer.
  struct ReadTarget {
    char* data;
    std::size_t size;
    bool direct;
  };

  ReadTarget read_target();
  void read_next();
  void on_read(const boost::system::error_code& error, std::size_t size, bool direct);
  void drain_now();
  void take(std::size_t size, bool direct);
  bool consume_staged();
  bool begin_frame();
  void on_meta_complete();
  std::size_t payload_size() const { return std::size_t{header_.meta_size} + header_.body_size; }
  char* body_space();
  void body_received(std::size_t count);
  void finish_frame();
  base::UniqueFd receive_descriptor();
  void queue(Frame frame);
  void schedule_write();
  void arm_deferred_write();
  void write_pending();
  void wait_writable(boost::asio::local::stream_protocol::socket& socket);
  long send_some(bool& descriptor_blocked);
  bool send_descriptor(Outgoing& outgoing);
  void mark_sent(std::size_t sent);
  void release_room_waiters();
  void clear_outbox();
  void fail();
  void violate(std::string violation);
  void stop_writing();

  boost::asio::local::stream_protocol::socket frame_socket_;
  // Written only by the sending end and read only by the receiving end, without waits but
  // for a full buffer: an Asio socket for that one wait.
  boost::asio::local::stream_protocol::socket descriptor_socket_;
  FrameHandler on_frame_;
  ClosedHandler on_closed_;
  bool closed_ = false;
  bool write_stopped_ = false;  // the peer takes no more frames; its own are still read
  const Descriptors role_;
  std::string violation_;

  // Reading state.
  bool reading_ = false;  // an async read is pending: its target must not move
  bool draining_ = false;
  std::vector<std::function<void()>> drain_waiters_;
  std::vector<char> staging_;
  std::size_t staged_begin_ = 0;
  std::size_t staged_end_ = 0;
  WireHeader header_{};
  std::size_t header_filled_ = 0;
  bool in_frame_ = false;
  Frame incoming_;
  std::size_t payload_filled_ = 0;  // bytes of meta + body received so far
  std::uint64_t frames_started_ = 0;
  std::size_t hand_over_from_ = 0;
  BodyChooser hand_over_wanted_;
  std::shared_ptr<ArrivingBody> arriving_;  // the body being read, when handed over

  // Writing state.
  std::deque<Outgoing> outbox_;
  std::size_t queued_bytes_ = 0;  // of outbox_, less what was sent of its front
  struct RoomWaiter {
    std::size_t at_most;
    std::function<void()> then;
  };
  std::vector<RoomWaiter> room_waiters_;
  bool write_scheduled_ = false;
  bool waiting_writable_ = false;
  boost::asio::steady_timer deferred_timer_;
  bool deferred_armed_ = false;
  std::vector<std::function<void()>> flush_waiters_;
};

// A connected pair of non-blocking, close-on-exec stream Unix sockets.
std::pair<base::UniqueFd, base::UniqueFd> make_socket_pair();

// One sendmsg of `parts`, with `fds` (if any) in one SCM_RIGHTS message: the bytes sent,
// or -1 with errno. The channel's own sending; tests and fuzz targets that must forge what
// a Channel never sends use it too.
long send_with_descriptors(int socket, std::span<const iovec> parts, std::span<const int> fds,
                           int flags);

}  // namespace sb::ipc
