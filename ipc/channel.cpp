#include "ipc/channel.hpp"

#include <sys/socket.h>
#include <sys/uio.h>

#include <boost/asio/post.hpp>
#include <cerrno>
#include <cstring>
#include <system_error>
#include <utility>

namespace sb::ipc {
namespace {

// Room for dozens of small frames per read; a body at least this large bypasses it. The
// supervisor holds one per worker, so it stays small.
constexpr std::size_t kStagingSize = 16 * 1024;
// Room for more than the one a frame carries, so that a sender passing several is seen.
constexpr std::size_t kMaxFdsPerMessage = 4;
constexpr const char* kDescriptorMissing = "declared a descriptor it did not pass";

}  // namespace

std::pair<base::UniqueFd, base::UniqueFd> make_socket_pair() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) != 0) {
    throw std::system_error(errno, std::generic_category(), "socketpair");
  }
  return {base::UniqueFd(fds[0]), base::UniqueFd(fds[1])};
}

ChannelEnds make_channel() {
  auto [frames_sender, frames_receiver] = make_socket_pair();
  auto [descriptors_sender, descriptors_receiver] = make_socket_pair();
  if (::shutdown(descriptors_sender.get(), SHUT_RD) != 0) {
    throw std::system_error(errno, std::generic_category(), "shutdown");
  }
  return {{std::move(frames_sender), std::move(descriptors_sender), Descriptors::kSent},
          {std::move(frames_receiver), std::move(descriptors_receiver), Descriptors::kReceived}};
}

Channel::Channel(boost::asio::io_context& io, ChannelEnd end)
    : frame_socket_(io, boost::asio::local::stream_protocol(), end.frames.release()),
      descriptor_socket_(io, boost::asio::local::stream_protocol(), end.descriptors.release()),
      role_(end.role),
      staging_(kStagingSize),
      deferred_timer_(io) {
  frame_socket_.non_blocking(true);
  descriptor_socket_.non_blocking(true);
}

// A body handed over and not yet whole can never be now: whoever follows it must not wait.
Channel::~Channel() {
  if (arriving_) arriving_->fail();
}

void Channel::start(FrameHandler on_frame, ClosedHandler on_closed) {
  on_frame_ = std::move(on_frame);
  on_closed_ = std::move(on_closed);
  read_next();
}

void Channel::hand_over_large_bodies(std::size_t at_least, BodyChooser wanted) {
  hand_over_from_ = at_least;
  hand_over_wanted_ = std::move(wanted);
}

void Channel::close() {
  on_closed_ = nullptr;  // the owner closing us needs no news of it
  fail();
}

// The peer no longer takes frames (it closed its end). What it sent before closing is
// still to be read, and the read side ends the channel at end of stream: a worker's last
// audit line must not be lost because a frame to it failed first.
void Channel::stop_writing() {
  write_stopped_ = true;
  clear_outbox();
  auto waiters = std::move(flush_waiters_);
  for (auto& waiter : waiters) boost::asio::post(frame_socket_.get_executor(), std::move(waiter));
}

void Channel::fail() {
  if (closed_) return;
  closed_ = true;
  boost::system::error_code ignored;
  frame_socket_.close(ignored);
  descriptor_socket_.close(ignored);
  deferred_timer_.cancel();
  if (arriving_) std::exchange(arriving_, nullptr)->fail();
  clear_outbox();
  auto waiters = std::move(flush_waiters_);
  for (auto& waiter : drain_waiters_) waiters.push_back(std::move(waiter));
  drain_waiters_.clear();
  for (auto& waiter : waiters) boost::asio::post(frame_socket_.get_executor(), std::move(waiter));
  if (on_closed_) {
    boost::asio::post(frame_socket_.get_executor(),
                      [handler = std::move(on_closed_), violation = std::move(violation_)] {
                        handler(violation);
                      });
  }
}

void Channel::violate(std::string violation) {
  if (violation_.empty()) violation_ = std::move(violation);
  fail();
}

// ---- reading ----

// A large body is read straight into place rather than through the staging buffer.
Channel::ReadTarget Channel::read_target() {
  if (in_frame_ && staged_begin_ == staged_end_ && payload_filled_ >= header_.meta_size &&
      payload_size() - payload_filled_ >= kStagingSize) {
    return {body_space(), payload_size() - payload_filled_, true};
  }
  if (staged_begin_ == staged_end_) staged_begin_ = staged_end_ = 0;
  return {staging_.data() + staged_end_, staging_.size() - staged_end_, false};
}

// Asio tries the socket at once and, when it is empty, waits on the registration it holds:
// the channel is read without any system call beyond the reads themselves.
void Channel::read_next() {
  const ReadTarget target = read_target();
  reading_ = true;
  // A body handed over may be dropped by its reader and the channel while a read into it
  // is pending: the read holds it.
  frame_socket_.async_read_some(
      boost::asio::buffer(target.data, target.size),
      [self = shared_from_this(), direct = target.direct, holds = arriving_](
          const boost::system::error_code& error, std::size_t size) {
        self->on_read(error, size, direct);
      });
}

void Channel::on_read(const boost::system::error_code& error, std::size_t size, bool direct) {
  reading_ = false;
  if (closed_) return;
  // Aborted only by drain(), which wants what was read and then the rest.
  if (error && error != boost::asio::error::operation_aborted) return fail();
  take(size, direct);
  if (closed_) return;
  if (draining_) return drain_now();
  read_next();
}

void Channel::drain(std::function<void()> then) {
  if (closed_ || !reading_) {
    boost::asio::post(frame_socket_.get_executor(), std::move(then));
    return;
  }
  drain_waiters_.push_back(std::move(then));
  if (draining_) return;
  draining_ = true;
  // The pending read completes now, with whatever it already read; on_read goes on from
  // there. Reading beside it instead could deliver bytes ahead of the ones it holds.
  boost::system::error_code ignored;
  frame_socket_.cancel(ignored);
}

void Channel::drain_now() {
  while (!closed_) {
    const ReadTarget target = read_target();
    boost::system::error_code error;
    const std::size_t size =
        frame_socket_.read_some(boost::asio::buffer(target.data, target.size), error);
    if (error == boost::asio::error::would_block || error == boost::asio::error::try_again) break;
    if (error) {
      fail();  // end of stream included: everything was delivered
      break;
    }
    take(size, target.direct);
  }
  draining_ = false;
  auto waiters = std::move(drain_waiters_);
  drain_waiters_.clear();
  for (auto& waiter : waiters) boost::asio::post(frame_socket_.get_executor(), std::move(waiter));
  if (!closed_) read_next();
}

// Accounts for `size` bytes just read into the read target, delivering the frames they
// complete.
void Channel::take(std::size_t size, bool direct) {
  if (direct) {
    body_received(size);
    if (!closed_ && payload_filled_ == payload_size()) finish_frame();
  } else {
    staged_end_ += size;
  }
  if (!closed_ && !consume_staged()) fail();
}

// Moves staged bytes into the header, meta and body of the frame being read, delivering
// each frame as it completes. Returns false on a malformed frame.
bool Channel::consume_staged() {
  while (!closed_ && staged_begin_ < staged_end_) {
    const std::size_t available = staged_end_ - staged_begin_;
    if (!in_frame_) {
      if (header_filled_ == 0) ++frames_started_;
      const std::size_t take = std::min(available, sizeof header_ - header_filled_);
      std::memcpy(reinterpret_cast<char*>(&header_) + header_filled_,
                  staging_.data() + staged_begin_, take);
      header_filled_ += take;
      staged_begin_ += take;
      if (header_filled_ == sizeof header_ && !begin_frame()) return false;
      continue;
    }
    const char* staged = staging_.data() + staged_begin_;
    if (payload_filled_ < header_.meta_size) {
      const std::size_t take = std::min(available, header_.meta_size - payload_filled_);
      std::memcpy(incoming_.meta.data() + payload_filled_, staged, take);
      payload_filled_ += take;
      staged_begin_ += take;
      if (payload_filled_ == header_.meta_size) on_meta_complete();
    } else {
      const std::size_t take = std::min(available, payload_size() - payload_filled_);
      std::memcpy(body_space(), staged, take);
      staged_begin_ += take;
      body_received(take);
    }
    if (!closed_ && in_frame_ && payload_filled_ == payload_size()) finish_frame();
  }
  return true;
}

bool Channel::begin_frame() {
  if (header_.meta_size > kMaxMetaSize || header_.body_size > kMaxBodySize) {
    violation_ = "sent a frame larger than the channel allows";
    return false;
  }
  if (header_.reserved != 0) {
    violation_ = "sent a frame header with its reserved field set";
    return false;
  }
  if (header_.has_fd > 1 || (header_.has_fd && role_ == Descriptors::kSent)) {
    violation_ = "declared a descriptor on a frame, which it may not";
    return false;
  }
  incoming_ = Frame{};
  incoming_.type = static_cast<FrameType>(header_.type);
  incoming_.call_id = header_.call_id;
  incoming_.meta.resize(header_.meta_size);
  payload_filled_ = 0;
  in_frame_ = true;
  if (header_.meta_size == 0) on_meta_complete();
  if (!closed_ && in_frame_ && payload_size() == 0) finish_frame();
  return true;
}

// The descriptor of the frame just completed: its sender wrote it, one byte with one
// SCM_RIGHTS, before the frame's first byte, so it is waiting.
base::UniqueFd Channel::receive_descriptor() {
  char byte;
  iovec io{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFdsPerMessage)];
  msghdr message{};
  message.msg_iov = &io;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  const long got =
      ::recvmsg(descriptor_socket_.native_handle(), &message, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  if (got != 1) {
    // Which way it failed, for the log of a breach that should never happen.
    // Appended piece by piece: GCC 12 warns falsely (-Warray-bounds) on a chain of `+` here.
    violation_ = kDescriptorMissing;
    violation_.append(" (");
    violation_.append(got == 0 ? "its descriptor socket ended" : std::strerror(errno));
    violation_.append(")");
    return {};
  }
  std::vector<base::UniqueFd> received;  // each closed on return unless it is the one
  for (cmsghdr* header = CMSG_FIRSTHDR(&message); header; header = CMSG_NXTHDR(&message, header)) {
    if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t count = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(header) + i * sizeof(int), sizeof fd);
      received.emplace_back(fd);
    }
  }
  if (received.size() > 1 || (message.msg_flags & MSG_CTRUNC)) {
    violation_ = "passed more descriptors than a frame carries";
    return {};
  }
  if (received.empty()) {
    violation_ = std::string(kDescriptorMissing) + " (a byte came without one)";
    return {};
  }
  return std::move(received.front());
}

// The body's storage is chosen once the meta is in: a large body its owner wants early
// becomes an ArrivingBody, handed over now; any other is read into the frame.
void Channel::on_meta_complete() {
  const bool hand_over = hand_over_wanted_ && header_.body_size >= hand_over_from_ &&
                         !header_.has_fd && hand_over_wanted_(incoming_);
  if (!hand_over) {
    incoming_.body.resize(header_.body_size);
    return;
  }
  arriving_ = std::make_shared<ArrivingBody>(header_.body_size);
  Frame head = std::exchange(incoming_, Frame{});
  head.arriving = arriving_;
  if (on_frame_) on_frame_(std::move(head));
}

char* Channel::body_space() {
  if (arriving_) return arriving_->free_space();
  return incoming_.body.data() + (payload_filled_ - header_.meta_size);
}

void Channel::body_received(std::size_t count) {
  payload_filled_ += count;
  if (arriving_) arriving_->arrived_more(count);
}

void Channel::finish_frame() {
  in_frame_ = false;
  header_filled_ = 0;
  if (arriving_) {
    arriving_.reset();  // handed over at its meta, and whole now
    return;
  }
  if (header_.has_fd) {
    incoming_.fd = receive_descriptor();
    if (!incoming_.fd.valid()) return violate(kDescriptorMissing);
  }
  Frame done = std::move(incoming_);
  incoming_ = Frame{};
  if (!closed_ && on_frame_) on_frame_(std::move(done));
}

// ---- writing ----

void Channel::send(Frame frame) {
  if (closed_ || write_stopped_) return;
  queue(std::move(frame));
  schedule_write();
}

void Channel::send_deferred(Frame frame) {
  if (closed_ || write_stopped_) return;
  queue(std::move(frame));
  arm_deferred_write();
}

void Channel::queue(Frame frame) {
  Outgoing outgoing;
  outgoing.header.meta_size = static_cast<std::uint32_t>(frame.meta.size());
  outgoing.header.body_size = static_cast<std::uint32_t>(frame.body.size());
  outgoing.header.call_id = frame.call_id;
  outgoing.header.type = static_cast<std::uint16_t>(frame.type);
  outgoing.header.has_fd = frame.fd.valid() ? 1 : 0;
  outgoing.frame = std::move(frame);
  queued_bytes_ += outgoing.total();
  outbox_.push_back(std::move(outgoing));
}

void Channel::clear_outbox() {
  outbox_.clear();
  queued_bytes_ = 0;
  release_room_waiters();
}

void Channel::when_queued_at_most(std::size_t bytes, std::function<void()> then) {
  room_waiters_.push_back(RoomWaiter{bytes, std::move(then)});
  release_room_waiters();
}

// Waiters whose bound the outbox is now within, and all of them once nothing more can be
// written: they are posted, never run inside a send of their own producer's.
void Channel::release_room_waiters() {
  const bool ended = closed_ || write_stopped_;
  std::erase_if(room_waiters_, [&](RoomWaiter& waiter) {
    if (!ended && queued_bytes_ > waiter.at_most) return false;
    boost::asio::post(frame_socket_.get_executor(), std::move(waiter.then));
    return true;
  });
}

// At most one wait at a time: under load a send() carries the deferred frames long before
// it ends, and its end then finds nothing left to write.
void Channel::arm_deferred_write() {
  if (deferred_armed_) return;
  deferred_armed_ = true;
  deferred_timer_.expires_after(kDeferLimit);
  deferred_timer_.async_wait([self = shared_from_this()](const boost::system::error_code& error) {
    self->deferred_armed_ = false;
    if (error || self->closed_ || self->write_stopped_ || self->outbox_.empty()) return;
    self->schedule_write();
  });
}

// Frames sent by the handlers that are ready now go out together, after them: under load
// one sendmsg (and one wake-up of the peer) carries many frames.
void Channel::schedule_write() {
  if (write_scheduled_ || waiting_writable_) return;
  write_scheduled_ = true;
  boost::asio::post(frame_socket_.get_executor(), [self = shared_from_this()] {
    self->write_scheduled_ = false;
    if (!self->waiting_writable_) self->write_pending();
  });
}

void Channel::flush(std::function<void()> then) {
  if (closed_ || write_stopped_ || outbox_.empty()) {
    boost::asio::post(frame_socket_.get_executor(), std::move(then));
    return;
  }
  flush_waiters_.push_back(std::move(then));
  schedule_write();  // deferred frames included: whoever flushes is waiting for them
}

void Channel::write_pending() {
  while (!closed_ && !outbox_.empty()) {
    bool descriptor_blocked = false;
    const long sent = send_some(descriptor_blocked);
    if (sent < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return stop_writing();
      return wait_writable(descriptor_blocked ? descriptor_socket_ : frame_socket_);
    }
    mark_sent(static_cast<std::size_t>(sent));
    if (!room_waiters_.empty()) release_room_waiters();
  }
  if (closed_) return;
  auto waiters = std::move(flush_waiters_);
  for (auto& waiter : waiters) boost::asio::post(frame_socket_.get_executor(), std::move(waiter));
}

void Channel::wait_writable(boost::asio::local::stream_protocol::socket& socket) {
  waiting_writable_ = true;
  socket.async_wait(boost::asio::socket_base::wait_write,
                    [self = shared_from_this()](const boost::system::error_code& error) {
                      self->waiting_writable_ = false;
                      if (self->closed_) return;
                      // drain() cancels every wait on the frame socket: this one tries again.
                      if (error && error != boost::asio::error::operation_aborted) {
                        return self->fail();
                      }
                      self->write_pending();
                    });
}

// One sendmsg over as many queued frames as fit. A frame's descriptor goes ahead of its
// bytes, on the descriptor socket; when it cannot go yet, the frames before it go alone
// (or, first in line, it waits: `descriptor_blocked`).
long Channel::send_some(bool& descriptor_blocked) {
  constexpr std::size_t kMaxFramesPerSend = 64;
  iovec parts[3 * kMaxFramesPerSend];
  std::size_t count = 0;
  std::size_t skip = outbox_.front().sent;
  auto add = [&](const char* data, std::size_t size) {
    if (skip >= size) {
      skip -= size;
      return;
    }
    parts[count++] = iovec{const_cast<char*>(data) + skip, size - skip};
    skip = 0;
  };
  for (std::size_t index = 0; index < outbox_.size() && index < kMaxFramesPerSend; ++index) {
    Outgoing& outgoing = outbox_[index];
    if (outgoing.frame.fd.valid() && !send_descriptor(outgoing)) {
      if (index > 0) break;
      descriptor_blocked = true;
      return -1;
    }
    add(reinterpret_cast<const char*>(&outgoing.header), sizeof outgoing.header);
    add(outgoing.frame.meta.data(), outgoing.frame.meta.size());
    add(outgoing.frame.body.data(), outgoing.frame.body.size());
  }
  return send_with_descriptors(frame_socket_.native_handle(), std::span<const iovec>(parts, count),
                               {}, MSG_NOSIGNAL | MSG_DONTWAIT);
}

// A receiving end's descriptor socket is shut for writing: its own attempt fails (EPIPE).
bool Channel::send_descriptor(Outgoing& outgoing) {
  char byte = 0;
  const iovec part{&byte, 1};
  const int fd = outgoing.frame.fd.get();
  if (send_with_descriptors(descriptor_socket_.native_handle(), std::span<const iovec>(&part, 1),
                            std::span<const int>(&fd, 1), MSG_NOSIGNAL | MSG_DONTWAIT) != 1) {
    return false;
  }
  outgoing.frame.fd.reset();  // the receiver has its own copy now; ours must not linger
  return true;
}

long send_with_descriptors(int socket, std::span<const iovec> parts, std::span<const int> fds,
                           int flags) {
  msghdr message{};
  message.msg_iov = const_cast<iovec*>(parts.data());
  message.msg_iovlen = parts.size();
  std::vector<char> control;
  if (!fds.empty()) {
    control.resize(CMSG_SPACE(sizeof(int) * fds.size()));
    message.msg_control = control.data();
    message.msg_controllen = control.size();
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(header), fds.data(), sizeof(int) * fds.size());
  }
  return ::sendmsg(socket, &message, flags);
}

// Drops the frames that `sent` bytes completed and records progress into the next one.
void Channel::mark_sent(std::size_t sent) {
  queued_bytes_ -= sent;
  while (sent > 0) {
    Outgoing& front = outbox_.front();
    const std::size_t remaining = front.total() - front.sent;
    if (sent < remaining) {
      front.sent += sent;
      return;
    }
    sent -= remaining;
    outbox_.pop_front();
  }
}

}  // namespace sb::ipc
