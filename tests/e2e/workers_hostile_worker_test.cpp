// End to end: the worker is the less trusted side (docs/architecture.md, "Trust
// boundaries"). A scripted hostile worker (tests/support/hostile_worker.cpp) breaks each
// rule of the IPC once; the supervisor must kill it, log why with the computer's name,
// respawn it, and leave the other computer alone. Descriptors it smuggles are never held.
// Also: the sandbox a worker runs in, and a worker program replaced on disk.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <fstream>

#include "harness/http_client.hpp"
#include "harness/raw_socket.hpp"
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
                      Breach{"unasked-park", "parked unasked or twice"},
                      Breach{"before-hello", "spoke before its hello"},
                      Breach{"torn", "kept its status record torn"},
                      Breach{"version",
                             "worker is of another build; restart the switchboard service"}),
    [](const ::testing::TestParamInfo<Breach>& info) {
      std::string name;
      for (const char c : info.param.how) name += c == '-' ? '_' : c;
      return name;
    });

// A switch in place (docs/architecture.md, "Switching") asks every worker to park its
// session: one that answers with a record that does not read is killed as for any other
// breach, and the switch goes on for the others.
TEST_F(OwnBinDir, AWorkerParkingARecordThatDoesNotReadIsKilledAndTheSwitchGoesOn) {
  install(bin_dir() / "hostile_worker");
  ConfigBuilder config;
  config.computer("steady", steady_).computer("hostile-bad-record", hostile_);
  config.client("owner", owner_, R"({ "*" = ["*"] })", "steady");
  SwitchboardProcess sb(config, program());
  auto steady = attach_ready(sb, steady_, "steady", owner_.secret);
  ASSERT_TRUE(steady);
  ASSERT_TRUE(eventually([&] { return sb.worker("hostile-bad-record")["pid"].get<pid_t>() > 0; }));
  std::ofstream(state_dir() / "hostile-bad-record.go") << "go\n";

  sb.send_signal(SIGUSR2);
  const auto restarted = sb.audit().wait_for("service_restarted", {}, std::chrono::seconds(20));
  ASSERT_TRUE(restarted) << sb.diagnostics();
  EXPECT_EQ((*restarted)["resumed"], 1);
  const std::string log = sb.stderr_text();
  EXPECT_NE(log.find("parked a record that does not read"), std::string::npos) << log;
  EXPECT_FALSE(steady->closed());
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp/steady", owner_.secret, "echo", json{{"n", 1}})),
            (json{{"n", 1}}));
  // The new process's worker for it is the real one.
  EXPECT_TRUE(eventually([&] { return sb.worker("hostile-bad-record")["state"] == "idle"; }));
}

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

// A large reply is passed on while its worker is still sending it (docs/architecture.md,
// "Large replies"): a worker that has sent half of a 1 MiB reply and waits has already put
// that half in its caller's hands, under the response head and the caller's own id.
class LargeReply : public OwnBinDir {
 protected:
  // The hostile worker's slow replier, and the one that trickles its reply's second half.
  static constexpr const char* kComputer = "hostile-slow-reply";
  static constexpr const char* kTrickling = "hostile-trickle-reply";

  void SetUp() override { install(bin_dir() / "hostile_worker"); }

  ConfigBuilder config(const char* computer = kComputer) {
    ConfigBuilder config;
    config.computer(computer, hostile_).client("owner", owner_, R"({ "*" = ["*"] })", computer);
    return config;
  }

  // Starts the call on a raw connection and reads until the reply's first half is in.
  void call_until_first_half(SwitchboardProcess& sb, RawSocket& caller,
                             std::string_view accept = "application/json",
                             const char* computer = kComputer) {
    std::ofstream(state_dir() / (std::string(computer) + ".go")) << "go\n";
    ASSERT_TRUE(wait_ready(sb, owner_.secret, computer)) << sb.stderr_text();
    const std::string call =
        R"({"jsonrpc":"2.0","id":"big-1","method":"tools/call","params":{"name":"echo"}})";
    ASSERT_TRUE(
        caller.send_all("POST /mcp/" + std::string(computer) +
                        " HTTP/1.1\r\nHost: switchboard\r\nAuthorization: Bearer " + owner_.secret +
                        "\r\nContent-Type: application/json\r\nAccept: " + std::string(accept) +
                        "\r\nConnection: close\r\nContent-Length: " + std::to_string(call.size()) +
                        "\r\n\r\n" + call));
    ASSERT_TRUE(caller.read_until("FIRST-HALF-END")) << sb.stderr_text();
  }

  // The worker of `computer` never finishes its reply's frame, and keeps beating.
  void expect_expelled_half_way(const char* computer) {
    TestTimings timings("heartbeat=200,heartbeat_stale=1000,stall_kill=2000");
    SwitchboardProcess sb(config(computer), program());
    RawSocket caller(sb.port());
    ASSERT_NO_FATAL_FAILURE(call_until_first_half(sb, caller, "application/json", computer));

    const std::string answer = caller.read_to_end(20s);
    EXPECT_EQ(answer.find("SECOND-HALF-END"), std::string::npos);
    const auto audited = sb.audit().wait_for("call", fields_equal({{"computer", computer}}));
    ASSERT_TRUE(audited);
    EXPECT_EQ((*audited)["outcome"], "disconnected") << audited->dump();
    EXPECT_NE(sb.stderr_text().find("left a frame unfinished"), std::string::npos)
        << sb.stderr_text();
  }

  // The reply as the worker sent it, under the caller's id.
  static void expect_whole_reply(const json& reply) {
    ASSERT_TRUE(reply.is_object());
    EXPECT_EQ(reply["id"], "big-1");
    const json& content = reply["result"]["content"];
    ASSERT_EQ(content.size(), 2u) << content.dump().substr(0, 200);
    EXPECT_TRUE(content[0]["text"].get<std::string>().ends_with("FIRST-HALF-END"));
    EXPECT_EQ(content[1]["text"], "SECOND-HALF-END");
  }

  // A chunked body's data (RFC 9112 §7.1), without extensions or trailers.
  static std::string dechunked(std::string_view body) {
    std::string data;
    for (;;) {
      const auto line_end = body.find("\r\n");
      if (line_end == std::string_view::npos) return data;
      const std::size_t size = std::stoul(std::string(body.substr(0, line_end)), nullptr, 16);
      if (size == 0 || body.size() < line_end + 2 + size) return data;
      data += body.substr(line_end + 2, size);
      body.remove_prefix(std::min(body.size(), line_end + 2 + size + 2));
    }
  }
};

TEST_F(LargeReply, ReachesItsCallerWhileItsWorkerIsStillSendingIt) {
  SwitchboardProcess sb(config(), program());
  RawSocket caller(sb.port());
  ASSERT_NO_FATAL_FAILURE(call_until_first_half(sb, caller));

  std::ofstream(state_dir() / (std::string(kComputer) + ".rest")) << "rest\n";
  const std::string answer = caller.read_to_end();
  EXPECT_EQ(final_status(answer), 200);
  const auto head_end = answer.find("\r\n\r\n");
  ASSERT_NE(head_end, std::string::npos) << answer.substr(0, 400);
  const std::string body = answer.substr(head_end + 4);
  EXPECT_NE(answer.find("Content-Length: " + std::to_string(body.size()) + "\r\n"),
            std::string::npos)
      << answer.substr(0, head_end) << "\nbody: " << body.size() << " bytes, ending "
      << body.substr(body.size() - std::min<std::size_t>(body.size(), 60));
  expect_whole_reply(json::parse(body, nullptr, false));
  const auto audited = sb.audit().wait_for("call", fields_equal({{"computer", kComputer}}));
  ASSERT_TRUE(audited);
  EXPECT_EQ((*audited)["outcome"], "ok") << audited->dump();
}

// A caller that took a progress message has an event stream: the reply is its last event,
// framed as it arrives, and the line break the worker paused in the middle of (CR, then
// LF) starts one new data: line.
TEST_F(LargeReply, ReachesAnEventStreamWhileItsWorkerIsStillSendingIt) {
  SwitchboardProcess sb(config(), program());
  RawSocket caller(sb.port());
  ASSERT_NO_FATAL_FAILURE(call_until_first_half(sb, caller, "application/json, text/event-stream"));

  std::ofstream(state_dir() / (std::string(kComputer) + ".rest")) << "rest\n";
  const std::string answer = caller.read_to_end();
  EXPECT_EQ(final_status(answer), 200);
  const auto head_end = answer.find("\r\n\r\n");
  ASSERT_NE(head_end, std::string::npos) << answer.substr(0, 400);
  EXPECT_NE(answer.substr(0, head_end).find("text/event-stream"), std::string::npos);
  const auto events = harness::parse_sse(dechunked(answer.substr(head_end + 4)));
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].json()["method"], "notifications/progress");
  const std::string& reply = events[1].raw;
  EXPECT_EQ(std::count(reply.begin(), reply.end(), '\n'), 2) << reply.substr(0, 80);
  expect_whole_reply(events[1].json());
}

// A worker that dies half-way through a reply already under way: its caller's connection
// is closed short of the length announced, and the call is audited as disconnected.
TEST_F(LargeReply, IsCutShortForItsCallerWhenItsWorkerDiesHalfWay) {
  SwitchboardProcess sb(config(), program());
  RawSocket caller(sb.port());
  ASSERT_NO_FATAL_FAILURE(call_until_first_half(sb, caller));

  const pid_t worker = sb.worker(kComputer)["pid"].get<pid_t>();
  ASSERT_EQ(::kill(worker, SIGKILL), 0);
  const std::string answer = caller.read_to_end();
  EXPECT_EQ(answer.find("SECOND-HALF-END"), std::string::npos);
  const auto audited = sb.audit().wait_for("call", fields_equal({{"computer", kComputer}}));
  ASSERT_TRUE(audited);
  EXPECT_EQ((*audited)["outcome"], "disconnected") << audited->dump();
}

// A worker that beats on but never sends the rest of a reply already under way holds up
// its computer's calls as a silent one would: it is expelled at the stall limit, its
// caller's response is cut short and the call audited.
TEST_F(LargeReply, IsCutShortWhenItsWorkerStopsHalfWayAndBeatsOn) {
  expect_expelled_half_way(kComputer);
}

// Bytes that keep coming, too few and too slowly, do not make the frame any less
// unfinished: the worker is expelled at the stall limit all the same.
TEST_F(LargeReply, IsCutShortWhenItsWorkerTricklesIt) {
  expect_expelled_half_way(kTrickling);
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
