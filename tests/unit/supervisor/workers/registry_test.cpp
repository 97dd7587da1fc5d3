// The worker registry in process (supervisor/workers/): a real WorkerRegistry whose workers
// are scripted peers on the very channel and status record a worker process would get
// (worker_process.hpp puts them in place of the spawn), so that its frame checks,
// backstops and respawns are tested in milliseconds.
#include "supervisor/workers/registry.hpp"

#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ipc/channel.hpp"
#include "ipc/frame.hpp"
#include "ipc/status_board.hpp"
#include "ipc/supervisor_frames.hpp"
#include "ipc/worker_frames.hpp"
#include "supervisor/audit/audit_log.hpp"

namespace sb::supervisor {
namespace {

using namespace std::chrono_literals;

// A worker as the registry sees one: hello, status, frames; no process at all.
struct ScriptedWorker {
  int pid = 0;
  std::shared_ptr<ipc::Channel> channel;
  std::unique_ptr<ipc::StatusWriter> status;
  std::vector<ipc::SupervisorFrame> received;
  std::function<void(int wait_status)> exited;
  bool killed = false;

  void hello(int as_pid = 0) {
    channel->send(ipc::encode(ipc::Hello{.pid = as_pid ? as_pid : pid,
                                         .protocol = ipc::kProtocolVersion,
                                         .build = std::string(ipc::build_id())}));
  }
  void ready() {
    ipc::ComputerStatus ready;
    ready.state = ipc::ComputerState::kReady;
    ready.max_in_flight = 8;
    status->publish(ready);
    status->heartbeat();
  }
  void reply(std::uint64_t call_id, std::string body) {
    const std::size_t size = body.size();
    channel->send(ipc::encode(ipc::Reply{.call_id = call_id,
                                         .outcome = {ipc::CallStatus::kReplied, size},
                                         .body = std::move(body)}));
  }
  template <typename Frame>
  std::vector<Frame> frames() const {
    std::vector<Frame> found;
    for (const auto& frame : received) {
      if (const auto* one = std::get_if<Frame>(&frame)) found.push_back(*one);
    }
    return found;
  }
  // The process ends as a killed or exiting one does: its channel closes, then the wait.
  void exit(int wait_status, boost::asio::io_context& io) {
    channel->close();
    if (auto done = std::exchange(exited, nullptr)) {
      boost::asio::post(io, [done, wait_status] { done(wait_status); });
    }
  }
};

class ScriptedProcess final : public WorkerProcess {
 public:
  ScriptedProcess(std::shared_ptr<ScriptedWorker> worker, boost::asio::io_context& io)
      : worker_(std::move(worker)), io_(io) {}
  int pid() const override { return worker_->pid; }
  void async_wait(std::function<void(int)> exited) override { worker_->exited = std::move(exited); }
  void kill() override {
    worker_->killed = true;
    worker_->exit(SIGKILL, io_);
  }

 private:
  std::shared_ptr<ScriptedWorker> worker_;
  boost::asio::io_context& io_;
};

config::Computer computer(const std::string& name) {
  return config::Computer{.name = name, .secret = verifier_of(name + "-secret")};
}

class RegistryRig {
  // First, so that it outlives everything that uses it: the scripted workers' channels too.
  boost::asio::io_context io_;

 public:
  explicit RegistryRig(Timings timings = {})
      : audit_path_(std::filesystem::temp_directory_path() /
                    ("registry-test-" + std::to_string(::getpid()) + ".jsonl")),
        audit_(io_, audit_path_),
        registry_(io_, "/bin/true", audit_, timings, ServiceNotifier(""),
                  [this](const base::SpawnRequest& request) { return launch(request); }) {}
  ~RegistryRig() {
    // A process's wait holds its worker's record, as a real one's pending wait does until
    // the loop goes: let go of them, so the registry is the last to hold each.
    for (const auto& worker : launched) worker->exited = nullptr;
    std::filesystem::remove(audit_path_);
  }

  // Starts the registry's workers and runs until each has said hello and is ready.
  void start(const std::vector<std::string>& names) {
    std::vector<config::Computer> computers;
    for (const auto& name : names) computers.push_back(computer(name));
    registry_.start(computers, [] {});
    ASSERT_TRUE(run_until([&] { return launched.size() == names.size(); }));
    for (const auto& worker : launched) {
      worker->hello();
      worker->ready();
    }
    for (const auto& name : names) {
      ASSERT_TRUE(run_until([&] {
        const auto view = registry_.view(name);
        return view && view->ready;
      })) << name;
    }
  }

  std::uint64_t forward(const std::string& computer, std::optional<CallResult>& result,
                        std::chrono::milliseconds timeout = 10s) {
    return registry_.forward(
        computer,
        CallRequest{
            .caller = "alice", .timeout = timeout, .method = "tools/call", .params_json = "{}"},
        [&result](CallResult outcome) { result = std::move(outcome); });
  }

  template <typename Done>
  bool run_until(Done done, std::chrono::milliseconds limit = 2s) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (!done() && std::chrono::steady_clock::now() < until) {
      if (io_.stopped()) io_.restart();
      io_.run_for(2ms);
    }
    return done();
  }

  WorkerRegistry& registry() { return registry_; }
  boost::asio::io_context& io() { return io_; }
  std::vector<std::shared_ptr<ScriptedWorker>> launched;  // in launch order

 private:
  std::variant<std::unique_ptr<WorkerProcess>, std::string> launch(
      const base::SpawnRequest& request) {
    auto worker = std::make_shared<ScriptedWorker>();
    worker->pid = 100'000 + static_cast<int>(launched.size());
    ipc::ChannelEnd end{.role = ipc::Descriptors::kReceived};
    for (const auto& [from, to] : request.descriptors) {
      if (to == 3) end.frames = base::UniqueFd(::dup(from));
      if (to == 4) end.descriptors = base::UniqueFd(::dup(from));
    }
    std::string segment;
    for (std::size_t i = 0; i + 1 < request.args.size(); ++i) {
      if (request.args[i] == "--status-segment") segment = request.args[i + 1];
    }
    worker->status = std::make_unique<ipc::StatusWriter>(segment);
    worker->channel = std::make_shared<ipc::Channel>(io_, std::move(end));
    std::weak_ptr<ScriptedWorker> weak = worker;
    worker->channel->start(
        [weak](ipc::Frame&& frame) {
          if (const auto alive = weak.lock())
            alive->received.push_back(ipc::decode_supervisor_frame(std::move(frame)));
        },
        [](const std::string&) {});
    launched.push_back(worker);
    return std::make_unique<ScriptedProcess>(worker, io_);
  }

  std::filesystem::path audit_path_;
  AuditLog audit_;
  WorkerRegistry registry_;
};

TEST(WorkerRegistry, AReadyWorkerTakesACallAndItsReplyReachesTheCaller) {
  RegistryRig rig;
  rig.start({"alpha"});
  ScriptedWorker& alpha = *rig.launched[0];
  ASSERT_EQ(alpha.frames<ipc::Configure>().size(), 1u) << "configured before anything else";
  std::optional<CallResult> result;
  const std::uint64_t call_id = rig.forward("alpha", result);
  ASSERT_TRUE(rig.run_until([&] { return !alpha.frames<ipc::Call>().empty(); }));
  EXPECT_EQ(alpha.frames<ipc::Call>()[0].call_id, call_id);
  EXPECT_EQ(alpha.frames<ipc::Call>()[0].meta.caller, "alice");
  alpha.reply(call_id, R"({"jsonrpc":"2.0","result":{}})");
  ASSERT_TRUE(rig.run_until([&] { return result.has_value(); }));
  EXPECT_EQ(result->status, ipc::CallStatus::kReplied);
  EXPECT_EQ(result->reply_without_id, R"({"jsonrpc":"2.0","result":{}})");
}

TEST(WorkerRegistry, AWorkerThatRepliesToACallNeverMadeIsKilledAndStartedAgain) {
  RegistryRig rig;
  rig.start({"alpha"});
  ScriptedWorker& alpha = *rig.launched[0];
  std::optional<CallResult> pending;
  rig.forward("alpha", pending);
  alpha.reply(99, R"({"jsonrpc":"2.0","result":{}})");
  ASSERT_TRUE(rig.run_until([&] { return alpha.killed; }));
  ASSERT_TRUE(rig.run_until([&] { return pending.has_value(); }));
  EXPECT_EQ(pending->status, ipc::CallStatus::kDisconnected) << "its calls end with it";
  ASSERT_TRUE(rig.run_until([&] { return rig.launched.size() == 2; }))
      << "a fresh worker after the backoff";
  const auto view = rig.registry().view("alpha");
  EXPECT_FALSE(view && view->ready) << "not ready until the fresh one is";
}

TEST(WorkerRegistry, AHelloWithAnotherProcesssPidIsAViolation) {
  RegistryRig rig;
  rig.registry().start({computer("alpha")}, [] {});
  ASSERT_TRUE(rig.run_until([&] { return rig.launched.size() == 1; }));
  rig.launched[0]->hello(/*as_pid=*/4242);
  EXPECT_TRUE(rig.run_until([&] { return rig.launched[0]->killed; }));
}

TEST(WorkerRegistry, ACallItsWorkerNeverAnswersEndsAtItsBackstopAndIsCancelled) {
  Timings timings;
  timings.backstop_grace = 20ms;
  RegistryRig rig(timings);
  rig.start({"alpha"});
  ScriptedWorker& alpha = *rig.launched[0];
  std::optional<CallResult> result;
  const std::uint64_t call_id = rig.forward("alpha", result, /*timeout=*/30ms);
  ASSERT_TRUE(rig.run_until([&] { return result.has_value(); }));
  EXPECT_EQ(result->status, ipc::CallStatus::kTimeout);
  ASSERT_TRUE(rig.run_until([&] { return !alpha.frames<ipc::Cancel>().empty(); }));
  EXPECT_EQ(alpha.frames<ipc::Cancel>()[0].call_id, call_id);
  // A late reply, then one for a fresh call: frames are read in order, so once the second
  // is in, the first was judged.
  alpha.reply(call_id, R"({"jsonrpc":"2.0","result":{}})");
  std::optional<CallResult> next;
  const std::uint64_t next_id = rig.forward("alpha", next);
  alpha.reply(next_id, R"({"jsonrpc":"2.0","result":{}})");
  ASSERT_TRUE(rig.run_until([&] { return next.has_value(); }));
  EXPECT_EQ(next->status, ipc::CallStatus::kReplied);
  EXPECT_FALSE(alpha.killed) << "a late reply to a call it was told of is no violation";
}

TEST(WorkerRegistry, AWorkerThatExitsCostsOnlyItsOwnComputersCalls) {
  RegistryRig rig;
  rig.start({"alpha", "beta"});
  ScriptedWorker& alpha = *rig.launched[0];
  ScriptedWorker& beta = *rig.launched[1];
  std::optional<CallResult> to_alpha;
  std::optional<CallResult> to_beta;
  rig.forward("alpha", to_alpha);
  const std::uint64_t beta_call = rig.forward("beta", to_beta);
  ASSERT_TRUE(rig.run_until([&] { return !beta.frames<ipc::Call>().empty(); }));
  alpha.exit(/*exit code 1*/ 1 << 8, rig.io());
  ASSERT_TRUE(rig.run_until([&] { return to_alpha.has_value(); }));
  EXPECT_EQ(to_alpha->status, ipc::CallStatus::kDisconnected);
  EXPECT_FALSE(to_beta.has_value());
  beta.reply(beta_call, R"({"jsonrpc":"2.0","result":{"n":2}})");
  ASSERT_TRUE(rig.run_until([&] { return to_beta.has_value(); }));
  EXPECT_EQ(to_beta->status, ipc::CallStatus::kReplied);
  EXPECT_TRUE(rig.run_until([&] { return rig.launched.size() == 3; })) << "alpha's again";
}

}  // namespace
}  // namespace sb::supervisor
