// One worker as the supervisor knows it (supervisor/workers/worker.hpp), in process: the
// contract its frames are checked against, the sessions it may report, the lines owed for
// a process that died, and when its computer counts as responsive.
#include "supervisor/workers/worker.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <sys/socket.h>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <thread>

#include "ipc/worker_frames.hpp"

namespace sb::supervisor {
namespace {

class StillProcess final : public WorkerProcess {
 public:
  explicit StillProcess(bool& killed) : killed_(killed) {}
  int pid() const override { return 4242; }
  void async_wait(std::function<void(int)>) override {}
  void kill() override { killed_ = true; }

 private:
  bool& killed_;
};

// A worker whose process is a stand-in: its channel's far end is held, unread, and its
// status record is written by the test.
struct WorkerRig {
  boost::asio::io_context io;
  ipc::ChannelEnds ends = ipc::make_channel();
  std::string segment = "/switchboard-test-worker-" + std::to_string(::getpid());
  Worker worker{config::Computer{.name = "alpha"}};
  std::unique_ptr<ipc::StatusWriter> writer;
  bool killed = false;

  WorkerRig() {
    auto status = std::make_unique<ipc::StatusReader>(segment);
    writer = std::make_unique<ipc::StatusWriter>(status->segment_name());
    worker.started(std::make_unique<StillProcess>(killed), std::move(status),
                   std::make_shared<ipc::Channel>(io, std::move(ends.sender)));
  }
  WorkerNews hello(std::int64_t pid = 4242) {
    return worker.read(
        ipc::encode(ipc::Hello{
            .pid = pid, .protocol = ipc::kProtocolVersion, .build = std::string(ipc::build_id())}),
        1);
  }
  WorkerNews event(const ipc::SessionEvent& event) {
    return worker.read(ipc::encode(event), /*next_call_id=*/10);
  }
  // An attached computer's socket handed to the worker: its generation.
  std::uint64_t hand_over(const std::string& peer) {
    int pair[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
    base::UniqueFd socket(pair[0]);
    base::UniqueFd far(pair[1]);
    EXPECT_EQ(worker.hand_over(socket, "", peer, ServiceNotifier("")), HandOver::kDone);
    EXPECT_FALSE(socket.valid()) << "the socket went to the worker";
    return worker.generation();
  }
};

ipc::Frame reply(std::uint64_t call_id) {
  const std::string body = R"({"jsonrpc":"2.0","result":{}})";
  return ipc::encode(ipc::Reply{
      .call_id = call_id, .outcome = {ipc::CallStatus::kReplied, body.size()}, .body = body});
}

ipc::Frame progress(std::uint64_t call_id) {
  return ipc::encode(
      ipc::Message{.call_id = call_id,
                   .meta = {.kind = ipc::MessageKind::kProgress},
                   .body = R"({"jsonrpc":"2.0","method":"notifications/progress","params":{}})"});
}

std::string violation_of(const WorkerNews& news) {
  const auto* violation = std::get_if<worker_news::Violation>(&news);
  return violation ? violation->reason : "";
}

TEST(Worker, SpeaksOnlyAfterOneHelloFromItsOwnProcess) {
  WorkerRig rig;
  EXPECT_EQ(violation_of(rig.worker.read(reply(1), 2)), "spoke before its hello");
  EXPECT_EQ(violation_of(rig.hello(99)), "said hello with another process's pid");
  EXPECT_TRUE(std::holds_alternative<worker_news::Greeted>(rig.hello()));
  EXPECT_EQ(rig.worker.state(), Worker::State::kRunning);
  EXPECT_EQ(violation_of(rig.hello()), "said hello twice");
}

TEST(Worker, RepliesAndMessagesOnlyForCallsEverMade) {
  WorkerRig rig;
  rig.hello();
  EXPECT_EQ(violation_of(rig.worker.read(reply(7), 7)), "replied to a call never made");
  EXPECT_EQ(violation_of(rig.worker.read(progress(9), 7)), "sent a message for a call never made");
  const auto replied = rig.worker.read(reply(6), 7);
  ASSERT_TRUE(std::holds_alternative<ipc::Reply>(replied));
  EXPECT_EQ(std::get<ipc::Reply>(replied).call_id, 6u);
  EXPECT_TRUE(std::holds_alternative<ipc::Message>(rig.worker.read(progress(6), 7)));
}

TEST(Worker, ReportsOnlySessionsItWasHandedAndEachLineOnce) {
  WorkerRig rig;
  rig.hello();
  EXPECT_EQ(violation_of(rig.event(ipc::AttachEvent{.peer = "10.0.0.1", .generation = 1})),
            "reported an attach it was not given");
  const auto generation = rig.hand_over("10.0.0.1");
  EXPECT_EQ(violation_of(rig.event(ipc::AttachEvent{.peer = "10.0.0.9", .generation = generation})),
            "reported an attach it was not given")
      << "the supervisor's peer, not the worker's";
  const auto attached = rig.event(ipc::AttachEvent{.peer = "10.0.0.1", .generation = generation});
  ASSERT_TRUE(std::holds_alternative<worker_news::Session>(attached));
  EXPECT_TRUE(std::get<worker_news::Session>(attached).line);
  std::uint64_t live = 0;
  ASSERT_NE(rig.worker.live_session(&live), nullptr);
  EXPECT_EQ(live, generation);
  EXPECT_EQ(violation_of(rig.event(ipc::AttachEvent{.peer = "10.0.0.1", .generation = generation})),
            "reported an attach it was not given")
      << "attached once";

  const auto detached =
      rig.event(ipc::DetachEvent{.peer = "10.0.0.1", .generation = generation, .code = 4002});
  ASSERT_TRUE(std::holds_alternative<worker_news::Session>(detached));
  EXPECT_TRUE(std::get<worker_news::Session>(detached).line);
  EXPECT_EQ(rig.worker.live_session(&live), nullptr);
  EXPECT_EQ(rig.worker.row(std::chrono::seconds(3)).detaches,
            (std::map<std::string, std::uint64_t>{{"4002", 1}}));
  EXPECT_EQ(violation_of(rig.event(ipc::DetachEvent{.peer = "10.0.0.1", .generation = generation})),
            "reported a detach it was not given")
      << "detached once";
}

TEST(Worker, ADeadProcessOwesTheDetachOfEachAttachedSessionOnly) {
  WorkerRig rig;
  rig.hello();
  const auto attached = rig.hand_over("10.0.0.1");
  rig.event(ipc::AttachEvent{.peer = "10.0.0.1", .generation = attached});
  rig.hand_over("10.0.0.2");  // an upgrade still under way: no vm_attach, so no vm_detach
  bool carried_lost = false;
  const auto lines = rig.worker.lose_sessions(carried_lost);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].peer, "10.0.0.1");
  EXPECT_EQ(lines[0].generation, attached);
  EXPECT_EQ(lines[0].code, 1006u);
  EXPECT_FALSE(carried_lost);
  EXPECT_TRUE(rig.worker.lose_sessions(carried_lost).empty()) << "owed once";
}

TEST(Worker, ParksOnlyWhenAsked) {
  WorkerRig rig;
  rig.hello();
  EXPECT_EQ(violation_of(rig.worker.read(ipc::encode(ipc::Parked{}), 1)),
            "parked unasked or twice");
  EXPECT_TRUE(rig.worker.ask_to_park(std::chrono::seconds(1)));
  EXPECT_TRUE(
      std::holds_alternative<worker_news::Nothing>(rig.worker.read(ipc::encode(ipc::Parked{}), 1)))
      << "a worker with no session parks nothing";
  EXPECT_FALSE(rig.worker.take_parked());
}

TEST(Worker, MomentarilyTornRecordsKeepTheComputerResponsive) {
  WorkerRig rig;
  rig.hello();
  ipc::ComputerStatus ready;
  ready.state = ipc::ComputerState::kReady;
  rig.writer->heartbeat();
  rig.writer->publish(ready);
  std::atomic<bool> stop{false};
  std::thread publishing([&] {
    for (std::uint32_t n = 0; !stop.load(); ++n) {
      ready.in_flight = n % 64;
      rig.writer->publish(ready);
      rig.writer->heartbeat();
    }
  });
  int unresponsive = 0;
  for (int i = 0; i < 200'000; ++i) {
    rig.worker.watch(Timings{});  // reads the record, as the stall watch does
    if (!rig.worker.responsive(std::chrono::seconds(3))) ++unresponsive;
  }
  stop = true;
  publishing.join();
  EXPECT_EQ(unresponsive, 0);
}

}  // namespace
}  // namespace sb::supervisor
