// End to end: the worker is the less trusted side (docs/architecture.md, "Trust
// boundaries"). A scripted hostile worker (tests/support/hostile_worker.cpp) breaks each
// rule of the IPC once; the supervisor must kill it, log why with the computer's name,
// respawn it, and leave the other computer alone. Descriptors it smuggles are never held.
// Also: the sandbox a worker runs in, and a worker program replaced on disk.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>

#include "tests/e2e/e2e_helpers.hpp"

namespace sbtest {
namespace {

std::size_t descriptor_count(pid_t pid) {
  std::size_t count = 0;
  std::error_code error;
  for (auto it = fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", error);
       !error && it != fs::directory_iterator(); it.increment(error))
    ++count;
  return count;
}

// A hard link where the two are on one file system (sanitizer builds are large, and every
// test here installs two programs), else a copy.
void install_program(const fs::path& from, const fs::path& to) {
  std::error_code error;
  fs::create_hard_link(from, to, error);
  if (error) fs::copy_file(from, to);
}

std::string proc_status_field(pid_t pid, const std::string& field) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field + ":", 0) == 0) {
      const auto value = line.find_first_not_of(" \t", field.size() + 1);
      return value == std::string::npos ? "" : line.substr(value);
    }
  }
  return "";
}

// `switchboard` (linked or copied) in a directory of its own, beside whatever worker
// program the test puts there: the supervisor runs the `switchboard-worker` beside itself.
class OwnBinDir : public ::testing::Test {
 protected:
  void install(const fs::path& worker_program) {
    install_program(bin_dir() / "switchboard", bin_.path() / "switchboard");
    install_program(worker_program, bin_.path() / "switchboard-worker");
    fs::create_directory(state_dir());
    state_env_.emplace("SB_HOSTILE_STATE_DIR", state_dir().string());
    real_worker_env_.emplace("SB_HOSTILE_REAL_WORKER", (bin_dir() / "switchboard-worker").string());
  }
  fs::path program() const { return bin_.path() / "switchboard"; }
  fs::path state_dir() const { return bin_.path() / "state"; }

  TempDir bin_;
  std::optional<ScopedEnv> state_env_;
  std::optional<ScopedEnv> real_worker_env_;
  Secret steady_ = new_secret();
  Secret hostile_ = new_secret();
  Secret owner_ = new_secret();
};

struct Breach {
  std::string how;     // the hostile worker's script: the rest of its computer's name
  std::string reason;  // what the supervisor's log line must say
};

class HostileWorker : public OwnBinDir, public ::testing::WithParamInterface<Breach> {};

TEST_P(HostileWorker, IsKilledLoggedAndRespawnedAndTheOtherComputerIsUntouched) {
  install(bin_dir() / "hostile_worker");
  const std::string hostile = "hostile-" + GetParam().how;
  ConfigBuilder config;
  config.computer("steady", steady_).computer(hostile, hostile_);
  config.client("owner", owner_, R"({ "*" = ["*"] })", "steady");
  SwitchboardProcess sb(config, program());
  auto steady = attach_ready(sb, steady_, "steady", owner_.secret);
  ASSERT_TRUE(steady);
  const pid_t steady_pid = sb.worker("steady")["pid"].get<pid_t>();
  json row;
  ASSERT_TRUE(eventually([&] {
    row = sb.worker(hostile);
    return row["pid"].get<pid_t>() > 0;
  }));
  const pid_t hostile_pid = row["pid"].get<pid_t>();
  const std::size_t descriptors_before = descriptor_count(sb.pid());

  std::ofstream(state_dir() / (hostile + ".go")) << "go\n";

  // Killed and respawned once; the second worker is the real one and says hello.
  ASSERT_TRUE(eventually([&] {
    row = sb.worker(hostile);
    return row["restarts"] == 1 && row["state"] == "idle";
  })) << row.dump()
      << "\n"
      << sb.stderr_text();
  EXPECT_NE(row["pid"].get<pid_t>(), hostile_pid);
  EXPECT_FALSE(process_alive(hostile_pid));
  const std::string log = sb.stderr_text();
  EXPECT_NE(log.find(GetParam().reason), std::string::npos) << log;
  EXPECT_NE(log.find("computer=" + hostile), std::string::npos) << log;
  // Every descriptor it passed was closed, and its old channel and status record with it.
  EXPECT_TRUE(eventually([&] { return descriptor_count(sb.pid()) == descriptors_before; }))
      << descriptor_count(sb.pid()) << " descriptors, " << descriptors_before << " before";

  // The other computer never noticed.
  const json steady_row = sb.worker("steady");
  EXPECT_EQ(steady_row["pid"].get<pid_t>(), steady_pid);
  EXPECT_EQ(steady_row["restarts"], 0);
  const json reply =
      call_tool(sb.port(), "/mcp/steady", owner_.secret, "echo", json{{"after", GetParam().how}});
  EXPECT_EQ(echoed(reply), (json{{"after", GetParam().how}})) << reply.dump();
  // Nothing the hostile worker said reached the audit log.
  for (const auto& line : sb.audit().lines()) {
    EXPECT_NE(line.value("computer", ""), hostile) << line.dump();
    EXPECT_NE(line.value("event", ""), "config_reloaded") << line.dump();
  }
}

const std::string kBroke = "worker broke the IPC contract";

INSTANTIATE_TEST_SUITE_P(
    EveryRule, HostileWorker,
    ::testing::Values(Breach{"declared-descriptor", "declared a descriptor on a frame"},
                      Breach{"unknown-type", "a frame of type 999, which a worker does not send"},
                      Breach{"bad-meta", "a reply with a malformed meta"},
                      Breach{"reserved", "reserved field set"},
                      Breach{"oversized-event", "an event over 4 KiB"},
                      Breach{"forged-event", "a vm_attach event with fields of its own"},
                      Breach{"foreign-event", "an event it may not report"},
                      Breach{"unissued-generation", "reported a detach it was not given"},
                      Breach{"unmade-call", "replied to a call never made"},
                      Breach{"second-hello", "said hello twice"},
                      Breach{"before-hello", "spoke before its hello"},
                      Breach{"torn", "kept its status record torn"},
                      Breach{"version",
                             "worker is of another build; restart the switchboard service"}),
    [](const ::testing::TestParamInfo<Breach>& info) {
      std::string name;
      for (const char c : info.param.how) name += c == '-' ? '_' : c;
      return name;
    });

// A worker that never says hello would hold its place among the workers starting at once
// for ever: it is killed at the stall limit like a stalled one, and respawned.
TEST_F(OwnBinDir, AWorkerSilentSinceItsSpawnIsKilledAtTheStallLimitAndRespawned) {
  TestTimings timings("heartbeat=200,heartbeat_stale=1000,stall_kill=2000");
  install(bin_dir() / "hostile_worker");
  ConfigBuilder config;
  config.computer("hostile-silent", hostile_)
      .client("owner", owner_, R"({ "*" = ["*"] })", "hostile-silent");
  SwitchboardProcess sb(config, program());
  json row = sb.worker("hostile-silent");
  EXPECT_EQ(row["state"], "starting") << row.dump();
  ASSERT_TRUE(eventually(
      [&] {
        row = sb.worker("hostile-silent");
        return row["restarts"] == 1 && row["state"] == "idle";
      },
      20s))
      << row.dump() << "\n"
      << sb.stderr_text();
  EXPECT_NE(sb.stderr_text().find("worker did not say hello in time; killing it"),
            std::string::npos)
      << sb.stderr_text();
  auto computer = attach_ready(sb, hostile_, "hostile-silent", owner_.secret);
  ASSERT_TRUE(computer);
  const json reply =
      call_tool(sb.port(), "/mcp/hostile-silent", owner_.secret, "echo", json{{"c", 3}});
  EXPECT_EQ(echoed(reply), (json{{"c", 3}})) << reply.dump();
}

// The supervisor reads a worker's frames with no room for a descriptor, so the kernel
// closes each one a worker passes as its byte is read: the hello they rode on is read
// whole, the supervisor never holds them, and the worker is none the worse for it.
TEST_F(OwnBinDir, DescriptorsAWorkerPassesAreNeverHeldAndTheFramesAroundThemAreRead) {
  install(bin_dir() / "hostile_worker");
  ConfigBuilder config;
  config.computer("hostile-descriptors", hostile_)
      .client("owner", owner_, R"({ "*" = ["*"] })", "hostile-descriptors");
  SwitchboardProcess sb(config, program());
  json row;
  ASSERT_TRUE(eventually([&] {
    row = sb.worker("hostile-descriptors");
    return row["pid"].get<pid_t>() > 0;
  }));
  ASSERT_EQ(row["state"], "starting") << row.dump();
  const pid_t pid = row["pid"].get<pid_t>();
  const std::size_t descriptors_before = descriptor_count(sb.pid());

  std::ofstream(state_dir() / "hostile-descriptors.go") << "go\n";

  ASSERT_TRUE(eventually([&] {
    row = sb.worker("hostile-descriptors");
    return row["state"] == "idle";
  })) << row.dump()
      << "\n"
      << sb.stderr_text();
  EXPECT_EQ(row["pid"].get<pid_t>(), pid);
  EXPECT_EQ(row["restarts"], 0);
  EXPECT_TRUE(eventually([&] { return descriptor_count(sb.pid()) == descriptors_before; }))
      << descriptor_count(sb.pid()) << " descriptors, " << descriptors_before << " before";
  EXPECT_EQ(sb.stderr_text().find("IPC contract"), std::string::npos) << sb.stderr_text();
  ::kill(pid, SIGKILL);  // it would not leave at shutdown, which would then wait for it
}

TEST_F(OwnBinDir, WorkersRunWithNoNewPrivsAndASeccompFilter) {
  install(bin_dir() / "switchboard-worker");
  ConfigBuilder config;
  config.computer("steady", steady_).client("owner", owner_, R"({ "*" = ["*"] })", "steady");
  SwitchboardProcess sb(config, program());
  auto steady = attach_ready(sb, steady_, "steady", owner_.secret);
  ASSERT_TRUE(steady);
  const json row = sb.worker("steady");
  const pid_t pid = row["pid"].get<pid_t>();
  EXPECT_EQ(proc_status_field(pid, "NoNewPrivs"), "1");
  EXPECT_EQ(proc_status_field(pid, "Seccomp"), "2");
  EXPECT_EQ(row["sandboxed"], true);
  // Calls still work inside the sandbox.
  const json reply = call_tool(sb.port(), "/mcp/steady", owner_.secret, "echo", json{{"a", 1}});
  EXPECT_EQ(echoed(reply), (json{{"a", 1}})) << reply.dump();
  const CommandResult table = sb.run_cli({"workers"});
  EXPECT_NE(table.out.find("seccomp"), std::string::npos) << table.out;
}

// A package upgrade replaces the program on disk under a running supervisor. The
// supervisor executes the worker it opened at start, so a worker respawned afterwards is
// still of the supervisor's build: never a mix.
TEST_F(OwnBinDir, AWorkerProgramReplacedOnDiskIsNotWhatARespawnRuns) {
  install(bin_dir() / "switchboard-worker");
  ConfigBuilder config;
  config.computer("steady", steady_).client("owner", owner_, R"({ "*" = ["*"] })", "steady");
  SwitchboardProcess sb(config, program());
  ASSERT_TRUE(eventually([&] { return sb.worker("steady")["state"] == "idle"; }));
  const pid_t first = sb.worker("steady")["pid"].get<pid_t>();

  // As dpkg does: the new file is written aside and renamed over the old one.
  const fs::path marker = bin_.path() / "replacement-ran";
  const fs::path replacement = bin_.path() / "switchboard-worker.dpkg-new";
  {
    std::ofstream script(replacement);
    script << "#!/bin/sh\ntouch '" << marker.string() << "'\nexit 1\n";
  }
  fs::permissions(replacement, fs::perms::owner_all);
  fs::rename(replacement, bin_.path() / "switchboard-worker");

  ASSERT_EQ(::kill(first, SIGKILL), 0);
  json row;
  ASSERT_TRUE(eventually([&] {
    row = sb.worker("steady");
    return row["restarts"] == 1 && row["state"] == "idle";
  })) << row.dump();
  EXPECT_FALSE(fs::exists(marker)) << "the replaced program ran";
  auto again = attach_ready(sb, steady_, "steady", owner_.secret);
  ASSERT_TRUE(again);
  const json reply = call_tool(sb.port(), "/mcp/steady", owner_.secret, "echo", json{{"b", 2}});
  EXPECT_EQ(echoed(reply), (json{{"b", 2}})) << reply.dump();
}

}  // namespace
}  // namespace sbtest
