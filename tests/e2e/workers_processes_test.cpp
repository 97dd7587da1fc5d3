// End to end: the process architecture (docs/architecture.md, "Processes"):
// a worker killed or stopped costs only its own computer's calls and comes back; the
// `switchboard workers` command; shutdown on SIGTERM; and what descriptors a worker holds.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "tests/e2e/e2e_helpers.hpp"

namespace sbtest {
namespace {

class WorkerProcess : public ::testing::Test {
 protected:
  Secret alpha_ = new_secret();
  Secret beta_ = new_secret();
  Secret gamma_ = new_secret();
  Secret owner_ = new_secret();

  ConfigBuilder config(bool with_gamma = false) const {
    ConfigBuilder builder;
    builder.computer("alpha", alpha_).computer("beta", beta_, 4);
    if (with_gamma) builder.computer("gamma", gamma_);
    builder.client("owner", owner_, R"({ "*" = ["*"] })", "alpha");
    return builder;
  }
};

std::string exe_of(pid_t pid) {
  std::error_code error;
  return fs::read_symlink("/proc/" + std::to_string(pid) + "/exe", error).filename().string();
}

// ---------------------------------------------------------------------------------------
// Worker crash and stall

TEST_F(WorkerProcess, AKilledWorkerFailsItsCallAtOnceAndIsRespawned) {
  SwitchboardProcess sb(config());
  auto alpha = attach_ready(sb, alpha_, "alpha", owner_.secret);
  auto beta = attach_ready(sb, beta_, "beta", owner_.secret);
  ASSERT_TRUE(alpha && beta);
  const json before = sb.worker("alpha");
  const pid_t old_pid = before["pid"].get<pid_t>();
  ASSERT_GT(old_pid, 0);
  EXPECT_EQ(exe_of(old_pid), "switchboard-worker");
  EXPECT_EQ(parent_pid(old_pid), sb.pid());
  EXPECT_EQ(before["restarts"], 0);

  CallInFlight on_alpha(sb.port(), "/mcp/alpha", owner_.secret, "echo", hold(1), "a");
  CallInFlight on_beta(sb.port(), "/mcp/beta", owner_.secret, "echo", hold(2), "b");
  ASSERT_TRUE(alpha->wait_for_calls(1));
  ASSERT_TRUE(beta->wait_for_calls(1));

  ASSERT_EQ(::kill(old_pid, SIGKILL), 0);
  const auto killed_at = Clock::now();
  const json lost = on_alpha.wait();
  EXPECT_EQ(error_code(lost), kDisconnected) << lost;
  EXPECT_EQ(lost["id"], "a");
  EXPECT_LT(elapsed_since(killed_at), 2s) << "the call should fail at once, not at a deadline";
  EXPECT_TRUE(sb.audit().wait_for("call", fields_equal({{"outcome", "disconnected"}})));

  // The supervisor and the other computer are untouched.
  EXPECT_TRUE(process_alive(sb.pid()));
  EXPECT_EQ(http_get(sb.port(), "/healthz").status, 200);
  EXPECT_FALSE(on_beta.done());
  beta->answer_echo(beta->calls()[0]);
  EXPECT_EQ(echoed(on_beta.wait()), hold(2));
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp/beta", owner_.secret, "echo", json{{"n", 1}})),
            (json{{"n", 1}}));
  EXPECT_FALSE(beta->closed());

  // Nobody else held alpha's socket: its computer sees the connection end.
  const auto ended = alpha->wait_closed();
  ASSERT_TRUE(ended);
  EXPECT_FALSE(ended->close_frame);

  // A new worker: new pid, one restart; the computer attaches again and calls succeed.
  json after;
  ASSERT_TRUE(eventually([&] {
    after = sb.worker("alpha");
    return after["pid"].get<pid_t>() > 0 && after["pid"] != old_pid && after["state"] == "idle";
  })) << after;
  EXPECT_EQ(after["restarts"], 1);
  EXPECT_EQ(parent_pid(after["pid"].get<pid_t>()), sb.pid());
  EXPECT_EQ(sb.worker("beta")["restarts"], 0);
  auto again = attach_ready(sb, alpha_, "alpha", owner_.secret);
  ASSERT_TRUE(again);
  // The slot (and its generation) follows the verifier across the respawn.
  EXPECT_TRUE(
      sb.audit().wait_for("vm_attach", fields_equal({{"computer", "alpha"}, {"generation", 2}})));
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp/alpha", owner_.secret, "echo", json{{"n", 2}})),
            (json{{"n", 2}}));
}

// Every session that was attached ends with a vm_detach line (docs/protocol.md, "Session
// end"). The audit is the operator's only record; a worker that dies cannot write the line,
// so the supervisor, which sees the death, has to.
TEST_F(WorkerProcess, ASessionEndedByAWorkerCrashIsAuditedAsADetach) {
  SwitchboardProcess sb(config());
  auto alpha = attach_ready(sb, alpha_, "alpha", owner_.secret);
  ASSERT_TRUE(alpha);
  ASSERT_TRUE(sb.audit().wait_for("vm_attach", fields_equal({{"computer", "alpha"}})));
  ASSERT_EQ(::kill(sb.worker("alpha")["pid"].get<pid_t>(), SIGKILL), 0);
  ASSERT_TRUE(alpha->wait_closed());
  ASSERT_TRUE(eventually([&] { return sb.worker("alpha")["restarts"] == 1; }));
  const auto detach = sb.audit().wait_for(
      "vm_detach", fields_equal({{"computer", "alpha"}, {"generation", 1}}), 3s);
  EXPECT_TRUE(detach) << "vm_attach of generation 1 has no vm_detach:\n" << sb.audit().text();
}

TEST_F(WorkerProcess, RepeatedCrashesAreCountedAndEachIsRespawned) {
  SwitchboardProcess sb(config());
  std::set<pid_t> pids;
  for (int restarts = 1; restarts <= 2; ++restarts) {
    json row;
    ASSERT_TRUE(eventually([&] {
      row = sb.worker("alpha");
      return row["state"] == "idle" && row["pid"].get<pid_t>() > 0 &&
             !pids.contains(row["pid"].get<pid_t>());
    })) << row;
    pids.insert(row["pid"].get<pid_t>());
    ASSERT_EQ(::kill(row["pid"].get<pid_t>(), SIGKILL), 0);
    ASSERT_TRUE(eventually([&] { return sb.worker("alpha")["restarts"] == restarts; }));
  }
  json row;
  ASSERT_TRUE(eventually([&] {
    row = sb.worker("alpha");
    return row["state"] == "idle" && !pids.contains(row["pid"].get<pid_t>());
  })) << row;
  EXPECT_EQ(row["restarts"], 2);
  EXPECT_EQ(sb.worker("beta")["restarts"], 0);
  auto alpha = attach_ready(sb, alpha_, "alpha", owner_.secret);
  ASSERT_TRUE(alpha);
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp/alpha", owner_.secret, "echo", json{{"n", 1}})),
            (json{{"n", 1}}));
  EXPECT_NE(sb.stderr_text().find("worker exited"), std::string::npos);
}

TEST_F(WorkerProcess, AStoppedWorkerCostsItsCallTheBackstopAndRecoversAfterSigcont) {
  SwitchboardProcess sb(config());  // slow: 1 s, so the backstop is at 3 s
  auto alpha = attach_ready(sb, alpha_, "alpha", owner_.secret);
  auto beta = attach_ready(sb, beta_, "beta", owner_.secret);
  ASSERT_TRUE(alpha && beta);
  const pid_t pid = sb.worker("alpha")["pid"].get<pid_t>();

  CallInFlight stalled(sb.port(), "/mcp/alpha", owner_.secret, "slow", hold(1), "s");
  ASSERT_TRUE(alpha->wait_for_calls(1));
  ASSERT_EQ(::kill(pid, SIGSTOP), 0);
  ASSERT_TRUE(eventually([&] { return process_state(pid) == 'T'; }));

  const json reply = stalled.wait();
  EXPECT_EQ(error_code(reply), kTimeout) << reply;
  EXPECT_EQ(reply["id"], "s");
  EXPECT_GE(stalled.elapsed(), 2500ms) << "answered before the backstop";
  EXPECT_LT(stalled.elapsed(), 6s);

  // While it is stopped the computer is not ready; the other one serves.
  EXPECT_TRUE(
      eventually([&] { return computers_entry(sb, owner_.secret, "alpha")["ready"] == false; }));
  EXPECT_EQ(http_get(sb.port(), "/readyz/alpha", owner_.secret).status, 503);
  EXPECT_EQ(sb.worker("alpha")["state"], "stalled");
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp/beta", owner_.secret, "echo", json{{"n", 1}})),
            (json{{"n", 1}}));
  EXPECT_EQ(http_get(sb.port(), "/readyz").status, 200);

  ASSERT_EQ(::kill(pid, SIGCONT), 0);
  EXPECT_TRUE(wait_ready(sb, owner_.secret, "alpha"));
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp/alpha", owner_.secret, "echo", json{{"n", 2}})),
            (json{{"n", 2}}));
  const json row = sb.worker("alpha");
  EXPECT_EQ(row["pid"], pid) << "a short stall must not cost a restart";
  EXPECT_EQ(row["restarts"], 0);
  EXPECT_EQ(row["state"], "ready");
  EXPECT_FALSE(alpha->closed());
}

// A worker silent for long enough is killed and respawned, and the log says so
// (docs/architecture.md, "The status board"). It also covers a stalled worker whose
// computer is removed meanwhile: nothing respawns it, but it must not linger holding its
// computer's socket (the daemon would never learn that it was revoked).
TEST_F(WorkerProcess, StalledWorkersAreKilledAtTheStallLimitAndOnlyKeptComputersRespawn) {
  // 30 s for real (shared/timings.hpp); 3 s here.
  TestTimings timings("heartbeat=200,heartbeat_stale=1000,stall_kill=3000");
  SwitchboardProcess sb(config());
  auto alpha = attach_ready(sb, alpha_, "alpha", owner_.secret);
  auto beta = attach_ready(sb, beta_, "beta", owner_.secret);
  ASSERT_TRUE(alpha && beta);
  const pid_t pid = sb.worker("alpha")["pid"].get<pid_t>();
  const pid_t removed = sb.worker("beta")["pid"].get<pid_t>();
  ASSERT_EQ(::kill(pid, SIGSTOP), 0);
  ASSERT_EQ(::kill(removed, SIGSTOP), 0);
  sb.reload(ConfigBuilder()
                .computer("alpha", alpha_)
                .client("owner", owner_, R"({ "*" = ["*"] })", "alpha"));
  json row;
  ASSERT_TRUE(eventually(
      [&] {
        row = sb.worker("alpha");
        return row["pid"] != pid && row["state"] == "idle";
      },
      20s))
      << row;
  EXPECT_EQ(row["restarts"], 1);
  EXPECT_FALSE(process_alive(pid));
  EXPECT_NE(sb.stderr_text().find("killing it"), std::string::npos) << sb.stderr_text();
  const auto ended = alpha->wait_closed();
  ASSERT_TRUE(ended);
  auto again = attach_ready(sb, alpha_, "alpha", owner_.secret);
  ASSERT_TRUE(again);
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp/alpha", owner_.secret, "echo", json{{"n", 1}})),
            (json{{"n", 1}}));

  // The removed computer's stalled worker has had the same budget.
  EXPECT_TRUE(eventually([&] { return !process_alive(removed); }, 5s))
      << "the stalled worker of a removed computer (pid " << removed << ") is still there";
  EXPECT_TRUE(beta->wait_closed(5s)) << "beta's daemon still holds a socket to nowhere";
}

// ---------------------------------------------------------------------------------------
// switchboard workers

// Workers are spawned one per turn of the supervisor's event loop: it answers from the
// start, however many computers it has, while later workers are still queued (pid 0).
TEST_F(WorkerProcess, TheSupervisorAnswersBeforeItsLastWorkerIsSpawned) {
  constexpr int kComputers = 200;
  ConfigBuilder builder;
  for (int i = 0; i < kComputers; ++i)
    builder.computer(std::string("c").append(std::to_string(i)), new_secret());
  builder.client("owner", owner_, R"({ "*" = ["*"] })", "c0");
  SwitchboardProcess sb(builder);  // healthy: /healthz answered
  const json early = sb.workers();
  ASSERT_EQ(early.size(), static_cast<std::size_t>(kComputers));
  const auto queued = std::count_if(early.begin(), early.end(), [](const json& row) {
    return row["pid"] == 0 && row["state"] == "starting";
  });
  EXPECT_GT(queued, 0) << "every worker was spawned before the first answer";
  EXPECT_TRUE(eventually(
      [&] {
        const json rows = sb.workers();
        return std::all_of(rows.begin(), rows.end(),
                           [](const json& row) { return row["state"] == "idle"; });
      },
      60s));
}

TEST_F(WorkerProcess, WorkersPrintsOneRowPerComputerAsTableAndJson) {
  SwitchboardProcess sb(config());
  auto alpha = attach_ready(sb, alpha_, "alpha", owner_.secret);
  ASSERT_TRUE(alpha);
  CallInFlight pending(sb.port(), "/mcp/alpha", owner_.secret, "echo", hold(1));
  ASSERT_TRUE(alpha->wait_for_calls(1));

  json rows;
  ASSERT_TRUE(eventually([&] {
    rows = sb.workers();
    return rows.size() == 2 && rows[0]["state"] == "ready" && rows[1]["state"] == "idle" &&
           rows[0]["in_flight"] == 1;
  })) << rows;
  const json& a = rows[0];
  const json& b = rows[1];
  EXPECT_EQ(a["computer"], "alpha");  // config order
  EXPECT_EQ(b["computer"], "beta");
  for (const auto& row : rows) {
    const pid_t pid = row["pid"].get<pid_t>();
    EXPECT_GT(pid, 0);
    EXPECT_EQ(exe_of(pid), "switchboard-worker");
    EXPECT_EQ(parent_pid(pid), sb.pid());
    EXPECT_EQ(row["restarts"], 0);
    EXPECT_GT(row["resident_kib"].get<long>(), 0);
  }
  EXPECT_NE(a["pid"], b["pid"]);
  EXPECT_TRUE(a["attached_for_secs"].is_number_integer());
  EXPECT_GE(a["attached_for_secs"].get<long>(), 0);
  EXPECT_TRUE(b["attached_for_secs"].is_null());
  EXPECT_EQ(a["max_in_flight"], 8);
  EXPECT_EQ(b["in_flight"], 0);
  EXPECT_EQ(b["max_in_flight"], 4);

  const auto table = sb.run_cli({"workers"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  std::istringstream lines(table.out);
  std::string header;
  std::getline(lines, header);
  for (const char* column :
       {"COMPUTER", "PID", "STATE", "ATTACHED", "IN-FLIGHT", "RESTARTS", "MEMORY"}) {
    EXPECT_NE(header.find(column), std::string::npos) << column << " missing: " << header;
  }
  std::map<std::string, std::vector<std::string>> by_computer;
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::vector<std::string> fields;
    for (std::string word; words >> word;) fields.push_back(word);
    if (!fields.empty()) by_computer[fields[0]] = fields;
  }
  ASSERT_EQ(by_computer.size(), 2u) << table.out;
  const auto& alpha_row = by_computer["alpha"];
  ASSERT_GE(alpha_row.size(), 7u) << table.out;
  EXPECT_EQ(alpha_row[1], std::to_string(a["pid"].get<int>()));
  EXPECT_EQ(alpha_row[2], "ready");
  EXPECT_EQ(alpha_row[4], "1/8");
  EXPECT_EQ(alpha_row[5], "0");
  const auto& beta_row = by_computer["beta"];
  ASSERT_GE(beta_row.size(), 7u) << table.out;
  EXPECT_EQ(beta_row[2], "idle");
  EXPECT_EQ(beta_row[3], "-");
  EXPECT_EQ(beta_row[4], "0/4");

  alpha->answer_echo(alpha->calls()[0]);
  EXPECT_EQ(echoed(pending.wait()), hold(1));
}

TEST_F(WorkerProcess, WorkersWithoutARunningSupervisorIsAClearErrorExit1) {
  TempDir dir;
  const fs::path config = dir.path() / "switchboard.toml";
  {
    std::ofstream out(config);
    out << "listen = \"127.0.0.1:" << free_port() << "\"\ncontrol_socket = \""
        << (dir.path() / "nobody.sock").string() << "\"\n"
        << ConfigBuilder()
               .computer("alpha", alpha_)
               .client("owner", owner_, R"({ "*" = ["*"] })", "alpha")
               .toml();
  }
  const auto result = run_command(
      {(bin_dir() / "switchboard").string(), "workers", "-c", config.string()}, dir.path());
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("nobody.sock"), std::string::npos) << result.err;
  EXPECT_TRUE(result.out.empty()) << result.out;
}

// ---------------------------------------------------------------------------------------
// Shutdown

TEST_F(WorkerProcess, SigtermClosesEveryComputerWith1001AndExitsZero) {
  SwitchboardProcess sb(config());
  auto alpha = attach_ready(sb, alpha_, "alpha", owner_.secret);
  auto beta = attach_ready(sb, beta_, "beta", owner_.secret);
  ASSERT_TRUE(alpha && beta);
  const json rows = sb.workers();
  CallInFlight pending(sb.port(), "/mcp/alpha", owner_.secret, "echo", hold(1), "z");
  ASSERT_TRUE(alpha->wait_for_calls(1));

  sb.send_signal(SIGTERM);
  for (auto* fake : {alpha.get(), beta.get()}) {
    const auto closed = fake->wait_closed();
    ASSERT_TRUE(closed);
    EXPECT_TRUE(closed->close_frame);
    EXPECT_EQ(closed->code, 1001);
    EXPECT_EQ(closed->reason, "switchboard shutting down");
  }
  const json lost = pending.wait();
  EXPECT_EQ(error_code(lost), kDisconnected) << lost;
  EXPECT_EQ(sb.wait_exit(10s), 0);
  for (const auto& row : rows) {
    const pid_t pid = row["pid"].get<pid_t>();
    EXPECT_TRUE(eventually([&] { return !process_alive(pid); })) << "worker " << pid << " lives on";
  }
  EXPECT_THROW(http_get(sb.port(), "/healthz"), std::exception);
  EXPECT_FALSE(fs::exists(sb.control_socket()));
}

TEST_F(WorkerProcess, SigtermWithAStoppedWorkerStillExitsZeroWithinAFewSeconds) {
  SwitchboardProcess sb(config());
  auto alpha = attach_ready(sb, alpha_, "alpha", owner_.secret);
  auto beta = attach_ready(sb, beta_, "beta", owner_.secret);
  ASSERT_TRUE(alpha && beta);
  const pid_t stopped = sb.worker("beta")["pid"].get<pid_t>();
  ASSERT_EQ(::kill(stopped, SIGSTOP), 0);
  ASSERT_TRUE(eventually([&] { return process_state(stopped) == 'T'; }));
  const auto signalled = Clock::now();
  sb.send_signal(SIGTERM);
  const auto closed = alpha->wait_closed();
  ASSERT_TRUE(closed);
  EXPECT_EQ(closed->code, 1001);
  EXPECT_EQ(sb.wait_exit(15s), 0);
  EXPECT_LT(elapsed_since(signalled), 10s);
  EXPECT_TRUE(eventually([&] { return !process_alive(stopped); }))
      << "the stopped worker outlived its supervisor";
}

TEST_F(WorkerProcess, WhenTheSupervisorIsKilledItsWorkersCloseTheirComputersAndExit) {
  SwitchboardProcess sb(config());
  auto alpha = attach_ready(sb, alpha_, "alpha", owner_.secret);
  ASSERT_TRUE(alpha);
  const json rows = sb.workers();
  sb.send_signal(SIGKILL);
  EXPECT_EQ(sb.wait_exit(10s), -SIGKILL);
  const auto closed = alpha->wait_closed();
  ASSERT_TRUE(closed);
  EXPECT_TRUE(closed->close_frame);
  EXPECT_EQ(closed->code, 1001) << "nobody can use the computer any more";
  for (const auto& row : rows) {
    const pid_t pid = row["pid"].get<pid_t>();
    EXPECT_TRUE(eventually([&] { return !process_alive(pid); })) << "orphan worker " << pid;
  }
  // The control socket it left behind does not stop the next start.
  ASSERT_TRUE(fs::exists(sb.control_socket()));
  sb.restart();
  EXPECT_EQ(sb.workers().size(), 2u);
  auto again = attach_ready(sb, alpha_, "alpha", owner_.secret);
  ASSERT_TRUE(again);
}

TEST_F(WorkerProcess, ASecondSupervisorOnTheSameControlSocketRefusesToStart) {
  SwitchboardProcess sb(config());
  const fs::path second = sb.dir() / "second.toml";
  {
    std::ofstream out(second);
    out << "listen = \"127.0.0.1:" << free_port() << "\"\ncontrol_socket = \""
        << sb.control_socket().string() << "\"\naudit_path = \""
        << (sb.dir() / "second-audit.jsonl").string() << "\"\n"
        << config().toml();
  }
  const auto result =
      run_command({(bin_dir() / "switchboard").string(), "serve", "-c", second.string()}, sb.dir());
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("another switchboard"), std::string::npos) << result.err;
  // The first one is untouched and still answers on its control socket.
  EXPECT_EQ(sb.workers().size(), 2u);
  EXPECT_EQ(http_get(sb.port(), "/healthz").status, 200);
}

// ---------------------------------------------------------------------------------------
// What a worker holds

struct TcpSocket {
  int local_port = 0;
  int remote_port = 0;
  bool listening = false;
};

std::map<std::string, TcpSocket> tcp_sockets_by_inode() {
  std::map<std::string, TcpSocket> out;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
      fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
          timeout >> inode;
      TcpSocket socket;
      socket.local_port = std::stoi(local.substr(local.rfind(':') + 1), nullptr, 16);
      socket.remote_port = std::stoi(remote.substr(remote.rfind(':') + 1), nullptr, 16);
      socket.listening = state == "0A";
      out[inode] = socket;
    }
  }
  return out;
}

std::set<std::string> unix_socket_inodes() {
  std::set<std::string> out;
  std::ifstream in("/proc/net/unix");
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string num, refcount, protocol, flags, type, state, inode;
    fields >> num >> refcount >> protocol >> flags >> type >> state >> inode;
    out.insert(inode);
  }
  return out;
}

// The inodes of every "socket:[N]" descriptor of a process.
std::vector<std::string> socket_inodes(pid_t pid) {
  std::vector<std::string> out;
  for (const auto& entry : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd")) {
    std::error_code error;
    const std::string target = fs::read_symlink(entry.path(), error).string();
    if (target.rfind("socket:[", 0) == 0) out.push_back(target.substr(8, target.size() - 9));
  }
  return out;
}

struct WorkerSockets {
  std::vector<TcpSocket> tcp;
  int unix_sockets = 0;
  int other = 0;
};

WorkerSockets sockets_of(pid_t pid) {
  const auto tcp = tcp_sockets_by_inode();
  const auto unix_inodes = unix_socket_inodes();
  WorkerSockets out;
  for (const auto& inode : socket_inodes(pid)) {
    if (const auto found = tcp.find(inode); found != tcp.end()) {
      out.tcp.push_back(found->second);
    } else if (unix_inodes.contains(inode)) {
      ++out.unix_sockets;
    } else {
      ++out.other;
    }
  }
  return out;
}

TEST_F(WorkerProcess, AWorkerHoldsOnlyItsChannelAndItsOwnComputersSocket) {
  SwitchboardProcess sb(config());
  auto alpha = attach_ready(sb, alpha_, "alpha", owner_.secret);
  auto beta = attach_ready(sb, beta_, "beta", owner_.secret);
  ASSERT_TRUE(alpha && beta);
  // Callers' connections exist while workers are (re)started: one idle keep-alive
  // connection and one call in flight.
  HttpConnection idle(sb.port());
  ASSERT_EQ(idle.request(HttpRequest{.target = "/computers", .token = owner_.secret}).status, 200);
  CallInFlight pending(sb.port(), "/mcp/alpha", owner_.secret, "echo", hold(1));
  ASSERT_TRUE(alpha->wait_for_calls(1));

  // A worker spawned by reload, and one respawned after a crash, start while all of the
  // above are open in the supervisor.
  sb.reload(config(/*with_gamma=*/true));
  const pid_t old_beta = sb.worker("beta")["pid"].get<pid_t>();
  ASSERT_EQ(::kill(old_beta, SIGKILL), 0);
  json beta_row;
  ASSERT_TRUE(eventually([&] {
    beta_row = sb.worker("beta");
    return beta_row["pid"] != old_beta && beta_row["state"] == "idle";
  }));
  ASSERT_TRUE(eventually([&] { return sb.worker("gamma")["state"] == "idle"; }));
  auto beta_again = attach_ready(sb, beta_, "beta", owner_.secret);
  ASSERT_TRUE(beta_again);

  const std::map<std::string, const FakeComputer*> attached{
      {"alpha", alpha.get()}, {"beta", beta_again.get()}, {"gamma", nullptr}};
  for (const auto& [computer, fake] : attached) {
    SCOPED_TRACE(computer);
    const pid_t pid = sb.worker(computer)["pid"].get<pid_t>();
    const WorkerSockets sockets = sockets_of(pid);
    EXPECT_EQ(sockets.unix_sockets, 2) << "only the channel's frame and descriptor sockets";
    EXPECT_EQ(sockets.other, 0);
    for (const auto& socket : sockets.tcp) {
      EXPECT_FALSE(socket.listening) << "a listening socket (port " << socket.local_port << ")";
    }
    if (!fake) {
      EXPECT_TRUE(sockets.tcp.empty()) << "an unattached worker holds a TCP socket";
      continue;
    }
    ASSERT_EQ(sockets.tcp.size(), 1u) << "a worker holds a caller's or another computer's socket";
    EXPECT_EQ(sockets.tcp[0].local_port, sb.port());
    EXPECT_EQ(sockets.tcp[0].remote_port, fake->local_port());
  }
  alpha->answer_echo(alpha->calls()[0]);
  EXPECT_EQ(echoed(pending.wait()), hold(1));
}

}  // namespace
}  // namespace sbtest
