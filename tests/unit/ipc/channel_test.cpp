// The IPC channel over real sockets: framing, deferred frames, large bodies handed over as
// they arrive, descriptor passing, and refusal of malformed frames.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <thread>

#include "ipc/channel.hpp"

namespace sb::ipc {
namespace {

using namespace std::chrono_literals;

// Runs the loop until `done` or a deadline, so a broken channel fails instead of hanging.
void run_until(boost::asio::io_context& io, const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    io.run_for(10ms);
    io.restart();
  }
  ASSERT_TRUE(done()) << "timed out";
}

// Two connected channels, both started: `left` ignores what it receives, `right` gives
// each frame to `on_frame`. The test sends on left.
struct ChannelPair {
  std::shared_ptr<Channel> left;
  std::shared_ptr<Channel> right;
};

ChannelPair started_pair(boost::asio::io_context& io, std::function<void(Frame&&)> on_frame) {
  auto [sender, receiver] = make_channel();
  ChannelPair pair{std::make_shared<Channel>(io, std::move(sender)),
                   std::make_shared<Channel>(io, std::move(receiver))};
  pair.left->start([](Frame&&) {}, [](const std::string&) {});
  pair.right->start(std::move(on_frame), [](const std::string&) {});
  return pair;
}

TEST(Channel, DeliversFramesInOrderWithMetaAndBody) {
  boost::asio::io_context io;
  std::vector<Frame> received;
  auto [left, right] =
      started_pair(io, [&](Frame&& frame) { received.push_back(std::move(frame)); });

  left->send(
      Frame{.type = FrameType::kCall, .call_id = 7, .meta = R"({"caller":"a"})", .body = "{}"});
  left->send(Frame{.type = FrameType::kCancel, .call_id = 8});
  std::string large(5 * 1024 * 1024 + 3, 'x');
  large.back() = 'y';
  left->send(Frame{.type = FrameType::kReply, .call_id = 9, .meta = "{}", .body = large});
  run_until(io, [&] { return received.size() == 3; });

  EXPECT_EQ(received[0].type, FrameType::kCall);
  EXPECT_EQ(received[0].call_id, 7u);
  EXPECT_EQ(received[0].meta, R"({"caller":"a"})");
  EXPECT_EQ(received[0].body, "{}");
  EXPECT_EQ(received[1].type, FrameType::kCancel);
  EXPECT_TRUE(received[1].meta.empty());
  EXPECT_EQ(received[2].body, large);
}

// A deferred frame keeps its place: the frame sent after it does not overtake it, so a
// worker always learns a place was freed before the call that may need it.
TEST(Channel, ADeferredFrameGoesAheadOfTheFramesSentAfterIt) {
  boost::asio::io_context io;
  std::vector<Frame> received;
  auto [left, right] =
      started_pair(io, [&](Frame&& frame) { received.push_back(std::move(frame)); });

  left->send_deferred(Frame{.type = FrameType::kDelivered, .call_id = 3});
  left->send(Frame{.type = FrameType::kCall, .call_id = 4, .body = "{}"});
  run_until(io, [&] { return received.size() == 2; });

  EXPECT_EQ(received[0].type, FrameType::kDelivered);
  EXPECT_EQ(received[0].call_id, 3u);
  EXPECT_EQ(received[1].type, FrameType::kCall);
}

// With nothing sent after it, a deferred frame still leaves, on its own; a flush takes it
// too.
TEST(Channel, ADeferredFrameLeavesAloneAndWithAFlush) {
  boost::asio::io_context io;
  std::vector<std::uint64_t> received;
  auto [left, right] = started_pair(io, [&](Frame&& frame) { received.push_back(frame.call_id); });

  left->send_deferred(Frame{.type = FrameType::kDelivered, .call_id = 5});
  run_until(io, [&] { return received.size() == 1; });
  left->send_deferred(Frame{.type = FrameType::kDelivered, .call_id = 6});
  bool flushed = false;
  left->flush([&] { flushed = true; });
  run_until(io, [&] { return flushed && received.size() == 2; });
  EXPECT_EQ(received, (std::vector<std::uint64_t>{5, 6}));
}

// A producer waits for room: queued_bytes() counts what the peer has not taken yet, and
// when_queued_at_most runs once it has taken enough, or at once when there is room.
TEST(Channel, AWaitForRoomEndsWhenThePeerHasTakenEnough) {
  boost::asio::io_context io;
  auto [sender, receiver] = make_channel();
  auto left = std::make_shared<Channel>(io, std::move(sender));
  auto right = std::make_shared<Channel>(io, std::move(receiver));
  left->start([](Frame&&) {}, [](const std::string&) {});
  constexpr std::size_t kBody = 4 * 1024 * 1024;
  for (std::uint64_t id = 1; id <= 4; ++id) {
    left->send(Frame{.type = FrameType::kReply, .call_id = id, .body = std::string(kBody, 'x')});
  }
  EXPECT_GT(left->queued_bytes(), 3 * kBody) << "more than a socket buffer went at once";
  bool room = false;
  left->when_queued_at_most(kBody, [&] { room = true; });
  io.run_for(50ms);  // the peer reads nothing: no room can come
  io.restart();
  EXPECT_FALSE(room);

  std::size_t received = 0;
  right->start([&](Frame&&) { ++received; }, [](const std::string&) {});
  run_until(io, [&] { return room; });
  EXPECT_LE(left->queued_bytes(), kBody);
  run_until(io, [&] { return received == 4; });
  EXPECT_EQ(left->queued_bytes(), 0u);
  bool at_once = false;
  left->when_queued_at_most(0, [&] { at_once = true; });
  run_until(io, [&] { return at_once; });
}

// A closed channel frees its waiters: nothing more will leave.
TEST(Channel, ClosingEndsAWaitForRoom) {
  boost::asio::io_context io;
  auto [sender, receiver] = make_channel();
  auto left = std::make_shared<Channel>(io, std::move(sender));
  left->start([](Frame&&) {}, [](const std::string&) {});
  left->send(Frame{.type = FrameType::kReply, .call_id = 1, .body = std::string(8 << 20, 'x')});
  bool released = false;
  left->when_queued_at_most(0, [&] { released = true; });
  left->close();
  run_until(io, [&] { return released; });
  EXPECT_EQ(left->queued_bytes(), 0u);
}

// Closing with a deferred frame queued drops it with the rest of the queue.
TEST(Channel, ClosingDropsADeferredFrame) {
  boost::asio::io_context io;
  auto [sender, receiver] = make_channel();
  auto left = std::make_shared<Channel>(io, std::move(sender));
  left->send_deferred(Frame{.type = FrameType::kDelivered, .call_id = 7});
  left->close();
  left.reset();
  io.run_for(10s);  // returns once no wait is left
  char byte;
  EXPECT_EQ(::read(receiver.frames.get(), &byte, 1), 0) << "the closed channel wrote a frame";
}

// A large body its owner wants early is handed over as soon as its frame's meta is in,
// before the rest has arrived, then filled in order; the frames around it, and a large
// body it does not want, come whole.
TEST(Channel, HandsOverALargeBodyAsItArrives) {
  boost::asio::io_context io;
  std::vector<Frame> received;
  std::size_t arrived_at_hand_over = 0;
  std::vector<std::size_t> arrivals;
  auto [left, right] = started_pair(io, [&](Frame&& frame) {
    if (frame.arriving) {
      arrived_at_hand_over = frame.arriving->arrived();
      frame.arriving->follow(
          [&, body = frame.arriving.get()] { arrivals.push_back(body->arrived()); });
    }
    received.push_back(std::move(frame));
  });
  right->hand_over_large_bodies(64 * 1024,
                                [](const Frame& frame) { return frame.type == FrameType::kReply; });
  std::string large(3 * 1024 * 1024 + 5, '\0');
  for (std::size_t i = 0; i < large.size(); ++i) large[i] = static_cast<char>(i % 251);
  left->send(Frame{.type = FrameType::kEvent, .body = "before"});
  left->send(Frame{.type = FrameType::kReply, .call_id = 9, .meta = "{}", .body = large});
  left->send(Frame{.type = FrameType::kMessage, .call_id = 9, .meta = "{}", .body = large});
  left->send(Frame{.type = FrameType::kReply, .call_id = 10, .meta = "{}", .body = "small"});
  run_until(io, [&] { return received.size() == 4; });

  EXPECT_EQ(received[0].body, "before");
  ASSERT_TRUE(received[1].arriving);
  EXPECT_EQ(received[1].meta, "{}");
  EXPECT_TRUE(received[1].body.empty());
  EXPECT_LT(arrived_at_hand_over, large.size());
  const auto& body = *received[1].arriving;
  ASSERT_TRUE(body.complete());
  EXPECT_EQ(std::string_view(body.data(), body.size()), large);
  ASSERT_FALSE(arrivals.empty());
  EXPECT_TRUE(std::is_sorted(arrivals.begin(), arrivals.end()));
  EXPECT_EQ(arrivals.back(), large.size());
  EXPECT_FALSE(received[2].arriving);  // not wanted: whole
  EXPECT_EQ(received[2].body, large);
  EXPECT_FALSE(received[3].arriving);  // too small to hand over
  EXPECT_EQ(received[3].body, "small");
}

// The sender gone half-way through a handed-over body: the body fails, and says so once.
TEST(Channel, FailsAHandedOverBodyWhoseSenderLeaves) {
  boost::asio::io_context io;
  auto [left, right_end] = make_channel();
  auto right = std::make_shared<Channel>(io, std::move(right_end));
  std::shared_ptr<ArrivingBody> body;
  int failures = 0;
  bool closed = false;
  right->start(
      [&](Frame&& frame) {
        body = frame.arriving;
        if (body) body->follow([&] { failures += body->failed(); });
      },
      [&](const std::string&) { closed = true; });
  right->hand_over_large_bodies(1024, [](const Frame&) { return true; });

  const std::string part(100 * 1024, 'x');
  WireHeader header{0, 1024 * 1024, 4, static_cast<std::uint16_t>(FrameType::kReply), 0, 0};
  const iovec parts[2] = {{&header, sizeof header}, {const_cast<char*>(part.data()), part.size()}};
  ASSERT_EQ(send_with_descriptors(left.frames.get(), parts, {}, MSG_NOSIGNAL),
            static_cast<long>(sizeof header + part.size()));
  left.frames.reset();
  run_until(io, [&] { return closed; });
  ASSERT_TRUE(body);
  EXPECT_TRUE(body->failed());
  EXPECT_EQ(failures, 1);
  EXPECT_EQ(body->arrived(), part.size());
}

TEST(Channel, PassesADescriptorWithItsFrame) {
  boost::asio::io_context io;
  std::optional<Frame> received;
  auto [left, right] = started_pair(io, [&](Frame&& frame) { received = std::move(frame); });

  int pipe_fds[2];
  ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
  base::UniqueFd read_end(pipe_fds[0]);
  left->send(Frame{.type = FrameType::kAttach,
                   .meta = "{}",
                   .body = "GET /",
                   .fd = base::UniqueFd(pipe_fds[1])});
  run_until(io, [&] { return received.has_value(); });

  ASSERT_TRUE(received->fd.valid());
  EXPECT_EQ(received->body, "GET /");
  // The sender's copy is closed once sent, so the received one is the only writer left.
  ASSERT_EQ(::write(received->fd.get(), "ok", 2), 2);
  received->fd.reset();
  char buffer[8];
  EXPECT_EQ(::read(read_end.get(), buffer, sizeof buffer), 2);
  EXPECT_EQ(::read(read_end.get(), buffer, sizeof buffer), 0) << "a copy of the write end leaked";
}

TEST(Channel, ClosesOnAnOversizedFrameHeader) {
  boost::asio::io_context io;
  auto [sender, receiver] = make_channel();
  const int left_fd = sender.frames.get();
  auto right = std::make_shared<Channel>(io, std::move(receiver));
  bool closed = false;
  int frames = 0;
  right->start([&](Frame&&) { ++frames; }, [&](const std::string&) { closed = true; });
  WireHeader header{.meta_size = 0,
                    .body_size = kMaxBodySize + 1,
                    .call_id = 1,
                    .type = 102,
                    .has_fd = 0,
                    .reserved = 0};
  ASSERT_EQ(::write(left_fd, &header, sizeof header), static_cast<long>(sizeof header));
  run_until(io, [&] { return closed; });
  EXPECT_EQ(frames, 0);
}

TEST(Channel, ReportsThePeerHangingUp) {
  boost::asio::io_context io;
  auto [sender, receiver] = make_channel();
  auto right = std::make_shared<Channel>(io, std::move(receiver));
  bool closed = false;
  right->start([](Frame&&) {}, [&](const std::string&) { closed = true; });
  sender.frames.reset();
  run_until(io, [&] { return closed; });
}

WireHeader header_of(FrameType type, std::uint32_t body_size, std::uint16_t has_fd) {
  return WireHeader{.meta_size = 0,
                    .body_size = body_size,
                    .call_id = 1,
                    .type = static_cast<std::uint16_t>(type),
                    .has_fd = has_fd,
                    .reserved = 0};
}

// The supervisor's end: a descriptor smuggled on the frame socket is closed by the kernel
// as the frame is read, never held, and the frame around it is delivered whole.
TEST(Channel, TheSendingEndNeverHoldsADescriptorPassedToIt) {
  boost::asio::io_context io;
  auto [sender, receiver] = make_channel();
  const int worker_side = receiver.frames.get();
  auto supervisor = std::make_shared<Channel>(io, std::move(sender));
  std::vector<std::string> bodies;
  supervisor->start([&](Frame&& frame) { bodies.push_back(frame.body); },
                    [](const std::string&) {});
  int pipe_fds[2];
  ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
  base::UniqueFd read_end(pipe_fds[0]);
  base::UniqueFd write_end(pipe_fds[1]);
  const WireHeader header = header_of(FrameType::kEvent, 2, 0);
  const iovec head{const_cast<WireHeader*>(&header), sizeof header};
  const iovec body{const_cast<char*>("{}"), 2};
  const int smuggled = write_end.get();
  ASSERT_EQ(send_with_descriptors(worker_side, std::span<const iovec>(&head, 1),
                                  std::span<const int>(&smuggled, 1), 0),
            static_cast<long>(sizeof header));
  ASSERT_EQ(send_with_descriptors(worker_side, std::span<const iovec>(&body, 1),
                                  std::span<const int>(&smuggled, 1), 0),
            2);
  write_end.reset();
  run_until(io, [&] { return bodies.size() == 1; });
  EXPECT_EQ(bodies[0], "{}");
  // Ours closed and the kernel's copies dropped: the pipe's last writer is gone.
  char byte;
  EXPECT_EQ(::read(read_end.get(), &byte, 1), 0) << "a passed descriptor is still open";
}

// What a channel on `end` says as it closes after its peer wrote `header` alone on
// `peer_frames`; it must deliver no frame first.
std::string violation_after_header(ChannelEnd end, int peer_frames, const WireHeader& header) {
  boost::asio::io_context io;
  auto channel = std::make_shared<Channel>(io, std::move(end));
  std::string violation;
  bool closed = false;
  int frames = 0;
  channel->start([&](Frame&&) { ++frames; },
                 [&](const std::string& said) {
                   violation = said;
                   closed = true;
                 });
  EXPECT_EQ(::write(peer_frames, &header, sizeof header), static_cast<long>(sizeof header));
  run_until(io, [&] { return closed; });
  EXPECT_EQ(frames, 0);
  return violation;
}

TEST(Channel, TheSendingEndRefusesAFrameThatDeclaresADescriptor) {
  auto [sender, receiver] = make_channel();
  EXPECT_EQ(violation_after_header(std::move(sender), receiver.frames.get(),
                                   header_of(FrameType::kReply, 0, 1)),
            "declared a descriptor on a frame, which it may not");
}

// A worker's end: a frame that declares a descriptor its sender never passed ends the
// channel rather than wait for one.
TEST(Channel, TheReceivingEndRefusesADeclaredDescriptorThatNeverCame) {
  auto [sender, receiver] = make_channel();
  const std::string violation = violation_after_header(std::move(receiver), sender.frames.get(),
                                                       header_of(FrameType::kAttach, 0, 1));
  EXPECT_TRUE(violation.starts_with("declared a descriptor it did not pass (")) << violation;
}

// Descriptors keep to their frames when several frames with and without them are queued
// together. A drain delivers what is in the socket before it reports, even with the
// channel's read already waiting: the worker's end runs on a loop of its own, idle while
// the frames are sent.
TEST(Channel, DescriptorsKeepToTheirFramesAndADrainDeliversWhatWasSent) {
  boost::asio::io_context supervisor_io;
  boost::asio::io_context worker_io;
  std::vector<Frame> received;
  auto [sender, receiver] = make_channel();
  auto supervisor = std::make_shared<Channel>(supervisor_io, std::move(sender));
  auto worker = std::make_shared<Channel>(worker_io, std::move(receiver));
  supervisor->start([](Frame&&) {}, [](const std::string&) {});
  worker->start([&](Frame&& frame) { received.push_back(std::move(frame)); },
                [](const std::string&) {});
  worker_io.poll();  // the read finds nothing and waits

  std::vector<base::UniqueFd> read_ends;
  for (std::uint64_t id = 1; id <= 6; ++id) {
    Frame frame{.type = FrameType::kAttach, .call_id = id, .body = std::to_string(id)};
    if (id % 2 == 0) {
      int pipe_fds[2];
      ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
      read_ends.emplace_back(pipe_fds[0]);
      frame.fd = base::UniqueFd(pipe_fds[1]);
    }
    supervisor->send(std::move(frame));
  }
  bool flushed = false;
  supervisor->flush([&] { flushed = true; });
  run_until(supervisor_io, [&] { return flushed; });
  ASSERT_TRUE(received.empty());

  bool drained = false;
  worker->drain([&] { drained = true; });
  run_until(worker_io, [&] { return drained; });
  ASSERT_EQ(received.size(), 6u) << "the drain reported before delivering what was sent";
  for (std::size_t i = 0; i < received.size(); ++i) {
    EXPECT_EQ(received[i].call_id, i + 1);
    EXPECT_EQ(received[i].fd.valid(), (i + 1) % 2 == 0) << i;
  }
  for (std::size_t pipe = 0; pipe < read_ends.size(); ++pipe) {
    const std::string word = "pipe" + std::to_string(pipe);
    const base::UniqueFd& fd = received[2 * pipe + 1].fd;
    ASSERT_EQ(::write(fd.get(), word.data(), word.size()), static_cast<long>(word.size()));
    char buffer[16] = {};
    ASSERT_EQ(::read(read_ends[pipe].get(), buffer, sizeof buffer), static_cast<long>(word.size()));
    EXPECT_EQ(std::string(buffer), word) << "a descriptor went with another frame";
  }

  // The channel reads on after a drain.
  supervisor->send(Frame{.type = FrameType::kCancel, .call_id = 7});
  flushed = false;
  supervisor->flush([&] { flushed = true; });
  run_until(supervisor_io, [&] { return flushed; });
  run_until(worker_io, [&] { return received.size() == 7; });
}

// A peer that sent its last frames and closed: a frame sent to it fails, and what it sent
// is read all the same (a worker's last audit line must survive a frame it never took).
TEST(Channel, ReadsWhatThePeerSentAfterAWriteToItFailed) {
  boost::asio::io_context io;
  auto [sender, receiver] = make_channel();
  auto left = std::make_shared<Channel>(io, std::move(receiver));
  bool left_done = false;
  left->send(Frame{.type = FrameType::kEvent, .body = "last words"});
  left->flush([&] {
    left->close();
    left_done = true;
  });
  run_until(io, [&] { return left_done; });

  auto right = std::make_shared<Channel>(io, std::move(sender));
  right->send(Frame{.type = FrameType::kDelivered, .call_id = 7});  // to a closed peer
  std::vector<std::string> bodies;
  bool closed = false;
  right->start([&](Frame&& frame) { bodies.push_back(frame.body); },
               [&](const std::string&) { closed = true; });
  run_until(io, [&] { return closed; });
  EXPECT_EQ(bodies, std::vector<std::string>{"last words"});
}

}  // namespace
}  // namespace sb::ipc
