// End to end: switchboard-connect (docs/connect.md) runs a stdio MCP server
// (support/fake_stdio_server.cpp) and attaches it to the real switchboard as computer
// alpha. Calls, progress and lines that are not JSON-RPC; a server kept, with its session,
// across the switchboard's restart; never detached across twenty switches in place under
// load, nor by a kill of the supervisor under a service manager with a store; a server
// that exits mid-call and is restarted; close 4002 and
// 4003 ending it with their exit codes; a 401 and the secret file read again; SIGTERM; the
// transport rule; settings from a TOML file. And, against a fake switchboard (harness/fake_pod.hpp
// serves the same upgrade), wss:// with the certificate and host name checked, pings, and a silent
// link dropped.
#include <signal.h>

#include <atomic>
#include <fstream>
#include <regex>
#include <thread>

#include "harness/fake_pod.hpp"
#include "harness/test_pki.hpp"
#include "tests/e2e/connect_process.hpp"
#include "tests/e2e/e2e_helpers.hpp"

namespace sbtest {
namespace {

class Connect : public AlphaTest {
 protected:
  // Redials in a tenth of a second, a 401 retried after 300 ms, a 2 s grace.
  TestTimings timings_{"dial_backoff=100,dial_unauthorized=300,server_grace=2000"};

  fs::path secret_file(const SwitchboardProcess& sb, const std::string& secret) const {
    const fs::path file = sb.dir() / "alpha.secret";
    std::ofstream(file) << secret << "\n";
    return file;
  }

  std::vector<std::string> argv(const SwitchboardProcess& sb,
                                std::vector<std::string> server_args = {},
                                std::vector<std::string> options = {}) const {
    std::vector<std::string> words{(bin_dir() / "switchboard-connect").string(),
                                   "--url",
                                   "ws://127.0.0.1:" + std::to_string(sb.port()) + "/vm/attach",
                                   "--secret-file",
                                   (sb.dir() / "alpha.secret").string(),
                                   "--name",
                                   "alpha"};
    words.insert(words.end(), options.begin(), options.end());
    words.push_back("--");
    words.push_back((bin_dir() / "fake_stdio_server").string());
    words.insert(words.end(), server_args.begin(), server_args.end());
    return words;
  }

  // switchboard-connect for alpha with the right secret, its log in the switchboard's dir.
  std::unique_ptr<ConnectProcess> connect(const SwitchboardProcess& sb,
                                          std::vector<std::string> server_args = {},
                                          const std::string& log = "connect.log") const {
    secret_file(sb, alpha_.secret);
    return std::make_unique<ConnectProcess>(argv(sb, std::move(server_args)), sb.dir() / log);
  }
};

TEST_F(Connect, ACallReachesTheStdioServerAndItsAnswerComesBack) {
  SwitchboardProcess sb(config());
  const auto connector = connect(sb);
  ASSERT_TRUE(wait_ready(sb, owner_.secret, "alpha")) << connector->log();
  const json reply = call_tool(sb.port(), "/mcp/alpha", owner_.secret, "echo", json{{"x", 1}});
  EXPECT_EQ(echoed(reply), (json{{"x", 1}})) << reply;
  // The server's tools, and the switchboard's own vm_status.
  EXPECT_EQ(tool_names(list_tools(sb.port(), "/mcp/alpha", owner_.secret)),
            (std::vector<std::string>{"echo", "progress", "exit", "wait", "count", "flood",
                                      "vm_status"}));
  const auto attach = sb.audit().wait_for("vm_attach");
  ASSERT_TRUE(attach);
  EXPECT_EQ((*attach)["computer"], "alpha");
}

TEST_F(Connect, ProgressFromTheServerReachesTheCallerOnAnEventStream) {
  SwitchboardProcess sb(config());
  const auto connector = connect(sb);
  ASSERT_TRUE(wait_ready(sb, owner_.secret, "alpha")) << connector->log();
  json call = tool_call(7, "progress", json{{"p", true}});
  call["params"]["_meta"] = {{"progressToken", "mine"}};
  const HttpResponse response =
      http(sb.port(), HttpRequest{.method = "POST",
                                  .target = "/mcp/alpha",
                                  .body = call.dump(),
                                  .token = owner_.secret,
                                  .headers = {{"Content-Type", "application/json"},
                                              {"Accept", "application/json, text/event-stream"}}});
  ASSERT_TRUE(response.is_event_stream()) << response.body;
  const auto messages = sse_messages(response.body);
  ASSERT_EQ(messages.size(), 3u) << response.body;
  for (int step = 0; step < 2; ++step) {
    EXPECT_EQ(messages[step]["method"], "notifications/progress");
    EXPECT_EQ(messages[step]["params"]["progressToken"], "mine");
    EXPECT_EQ(messages[step]["params"]["progress"], step + 1);
  }
  EXPECT_EQ(echoed(messages[2]), (json{{"p", true}}));
}

TEST_F(Connect, ACallersCancelReachesTheStdioServerWithTheIdItSaw) {
  SwitchboardProcess sb(config());
  const auto connector = connect(sb);
  ASSERT_TRUE(wait_ready(sb, owner_.secret, "alpha")) << connector->log();
  CallInFlight call(sb.port(), "/mcp/alpha", owner_.secret, "wait", json::object(), "mine");
  ASSERT_TRUE(connector->wait_log("server: called wait id=")) << connector->log();
  const std::string log = connector->log();
  const auto at =
      log.find("server: called wait id=") + std::string("server: called wait id=").size();
  const std::string seen_id = log.substr(at, log.find(' ', at) - at);
  const json cancel{{"jsonrpc", "2.0"},
                    {"method", "notifications/cancelled"},
                    {"params", {{"requestId", "mine"}, {"reason", "user hit stop"}}}};
  EXPECT_EQ(post_mcp(sb.port(), "/mcp/alpha", owner_.secret, cancel).status, 202);
  EXPECT_TRUE(connector->wait_log("server: cancelled id=" + seen_id + " reason=user hit stop"))
      << connector->log();
  EXPECT_EQ(error_code(call.wait()), -32800);
}

TEST_F(Connect, ALineThatIsNotJsonRpcIsLoggedAndNotSent) {
  SwitchboardProcess sb(config());
  const auto connector = connect(sb, {"--junk"});
  ASSERT_TRUE(wait_ready(sb, owner_.secret, "alpha")) << connector->log();
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp/alpha", owner_.secret, "echo", json{{"y", 2}})),
            (json{{"y", 2}}));
  EXPECT_TRUE(connector->wait_log("not one JSON-RPC message; not sent")) << connector->log();
  // Had a junk line reached the switchboard, the computer would have been closed.
  EXPECT_EQ(sb.audit().count("vm_detach"), 0u);
}

// A server spewing junk does not flood the journal: the warning is written at most once
// a minute, with how many lines it stands for.
TEST_F(Connect, JunkLinesAreLoggedAtMostOnceAMinuteWithACount) {
  SwitchboardProcess sb(config());
  const auto connector = connect(sb, {"--junk"});
  ASSERT_TRUE(wait_ready(sb, owner_.secret, "alpha")) << connector->log();
  for (int n = 0; n < 30; ++n) {
    ASSERT_EQ(echoed(call_tool(sb.port(), "/mcp/alpha", owner_.secret, "echo", json{{"n", n}})),
              (json{{"n", n}}));
  }
  const std::string log = connector->log();
  EXPECT_EQ(occurrences(log, "not one JSON-RPC message; not sent"), 1u) << log;
  EXPECT_NE(log.find("count=1"), std::string::npos) << log;
}

TEST_F(Connect, TheServersStderrIsLoggedWithTheComputersName) {
  SwitchboardProcess sb(config());
  const auto connector = connect(sb, {"--stderr", "hello from the server"});
  EXPECT_TRUE(connector->wait_log("server: hello from the server computer=alpha"))
      << connector->log();
}

// A server's stderr is logged, but a flood of it is not: 1000 lines a minute, then one
// warning, and the count of the lines held back comes with the next minute's first line.
TEST_F(Connect, AServersStderrIsLoggedUpToAThousandLinesAMinute) {
  SwitchboardProcess sb(config());
  const auto connector = connect(sb, {"--stderr-lines", "2500"});
  ASSERT_TRUE(wait_ready(sb, owner_.secret, "alpha")) << connector->log();
  ASSERT_TRUE(connector->wait_log("the rest of this minute is counted, not logged"));
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp/alpha", owner_.secret, "echo", json{{"n", 1}})),
            (json{{"n", 1}}));
  const std::string log = connector->log();
  EXPECT_EQ(occurrences(log, "server: noise "), 1000u);
  EXPECT_NE(log.find("server: noise 1000 "), std::string::npos);
  EXPECT_EQ(log.find("server: noise 1001 "), std::string::npos);
  EXPECT_EQ(occurrences(log, "the rest of this minute is counted, not logged"), 1u);
}

TEST_F(Connect, AServerThatExitsMidCallIsRestartedAndAttachedAfresh) {
  SwitchboardProcess sb(config());
  const auto connector = connect(sb);
  ASSERT_TRUE(wait_ready(sb, owner_.secret, "alpha")) << connector->log();
  const pid_t first = connector->server_pid();
  EXPECT_EQ(error_code(call_tool(sb.port(), "/mcp/alpha", owner_.secret, "exit", json::object())),
            kDisconnected);
  EXPECT_TRUE(connector->wait_log("exit code 3")) << connector->log();
  // It closed the link itself, with 1011, and says so.
  EXPECT_TRUE(connector->wait_log("detached, code 1011")) << connector->log();
  EXPECT_EQ(connector->log().find("Operation canceled"), std::string::npos) << connector->log();
  ASSERT_TRUE(sb.audit().wait_for_count("vm_attach", 2)) << connector->log();
  ASSERT_TRUE(wait_ready(sb, owner_.secret, "alpha"));
  EXPECT_NE(connector->server_pid(), first);
  EXPECT_FALSE(process_alive(first));
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp/alpha", owner_.secret, "echo", json{{"z", 3}})),
            (json{{"z", 3}}));
  // A new server is a new session: its state starts afresh.
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp/alpha", owner_.secret, "count", json::object())), 1);
  const auto detach = sb.audit().wait_for("vm_detach");
  ASSERT_TRUE(detach);
  EXPECT_EQ((*detach)["code"], 1011);
}

// The server stays across the switchboard's going and coming back: its state (the count
// goes on), its one MCP handshake (a second initialize would be refused and the attach
// fail), and ids it never sees twice; the call the lost attach had in flight is cancelled.
TEST_F(Connect, AcrossASwitchboardRestartItKeepsItsServerAndItsSession) {
  SwitchboardProcess sb(config());
  const auto connector = connect(sb);
  ASSERT_TRUE(wait_ready(sb, owner_.secret, "alpha")) << connector->log();
  const pid_t server = connector->server_pid();
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp/alpha", owner_.secret, "count", json::object())), 1);
  CallInFlight waiting(sb.port(), "/mcp/alpha", owner_.secret, "wait", json::object());
  ASSERT_TRUE(connector->wait_log("server: called wait id=")) << connector->log();
  const std::string waiting_id = server_side_ids(connector->log(), "wait").front();

  sb.send_signal(SIGTERM);
  EXPECT_EQ(error_code(waiting.wait()), kDisconnected);
  ASSERT_TRUE(sb.wait_exit(kDefaultWait));
  EXPECT_TRUE(connector->wait_log("detached, code 1001")) << connector->log();
  EXPECT_TRUE(connector->wait_log("server: cancelled id=" + waiting_id +
                                  " reason=the switchboard link was lost"))
      << connector->log();
  sb.restart(/*same_port=*/true);
  ASSERT_TRUE(wait_ready(sb, owner_.secret, "alpha")) << connector->log();

  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp/alpha", owner_.secret, "count", json::object())), 2);
  EXPECT_EQ(connector->server_pid(), server);
  EXPECT_TRUE(process_alive(server));
  const std::string log = connector->log();
  EXPECT_NE(log.find("session=kept"), std::string::npos) << log;
  EXPECT_EQ(occurrences(log, "server: initialized"), 1u) << log;
  const auto counted = server_side_ids(log, "count");
  ASSERT_EQ(counted.size(), 2u) << log;
  EXPECT_NE(counted[0], counted[1]);
  EXPECT_NE(counted[1], waiting_id);
}

TEST_F(Connect, AKilledSwitchboardCostsTheServerNothing) {
  SwitchboardProcess sb(config());
  const auto connector = connect(sb);
  ASSERT_TRUE(wait_ready(sb, owner_.secret, "alpha")) << connector->log();
  const pid_t server = connector->server_pid();
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp/alpha", owner_.secret, "count", json::object())), 1);
  sb.send_signal(SIGKILL);
  ASSERT_TRUE(sb.wait_exit(kDefaultWait));
  EXPECT_TRUE(connector->wait_log("detached")) << connector->log();
  sb.restart(/*same_port=*/true);
  ASSERT_TRUE(wait_ready(sb, owner_.secret, "alpha")) << connector->log();
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp/alpha", owner_.secret, "count", json::object())), 2);
  EXPECT_EQ(connector->server_pid(), server);
  EXPECT_EQ(connector->log().find("the MCP server exited"), std::string::npos) << connector->log();
}

// Switching in place (docs/architecture.md, "Switching"): twenty switches while a caller
// loops calls, and switchboard-connect never notices: one attach, no detach, every call
// answered, its server's count going on.
TEST_F(Connect, TwentySwitchesInPlaceUnderLoadNeverDetachIt) {
  SwitchboardProcess sb(config());
  const auto connector = connect(sb);
  ASSERT_TRUE(wait_ready(sb, owner_.secret, "alpha")) << connector->log();
  std::atomic<bool> stop{false};
  std::atomic<int> counted{0};
  std::atomic<int> failed{0};
  std::thread caller([&] {
    HttpConnection connection(sb.port());
    for (int n = 1; !stop; ++n) {
      try {
        const json reply = connection
                               .request(mcp_request("/mcp/alpha", owner_.secret,
                                                    tool_call(n, "count", json::object())))
                               .json();
        if (echoed(reply) != json(counted + 1)) ++failed;
        ++counted;
      } catch (const std::exception&) {
        ++failed;
      }
    }
  });
  for (int i = 0; i < 20; ++i) {
    const int before = counted;
    ASSERT_TRUE(eventually([&] { return counted >= before + 3; })) << connector->log();
    sb.send_signal(SIGUSR2);
    ASSERT_TRUE(sb.audit().wait_for_count("service_restarted", i + 1, {}, std::chrono::seconds(20)))
        << sb.diagnostics();
  }
  stop = true;
  caller.join();
  EXPECT_EQ(failed, 0) << "of " << counted;
  const std::string log = connector->log();
  EXPECT_EQ(occurrences(log, "INFO attached"), 1u) << log;
  EXPECT_EQ(log.find("detached"), std::string::npos) << log;
  EXPECT_EQ(occurrences(log, "server: initialized"), 1u) << log;
}

// The supervisor killed under a service manager with a store: switchboard-connect stays
// attached, and its server's count goes on.
TEST_F(Connect, UnderAServiceManagerAKilledSwitchboardDoesNotDetachIt) {
  SwitchboardProcess sb(config(), SwitchboardProcess::UnderServiceManager{});
  const auto connector = connect(sb);
  ASSERT_TRUE(wait_ready(sb, owner_.secret, "alpha")) << connector->log();
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp/alpha", owner_.secret, "count", json::object())), 1);
  sb.service_crash(SIGKILL);
  ASSERT_TRUE(sb.audit().wait_for("service_restarted")) << sb.diagnostics();
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp/alpha", owner_.secret, "count", json::object())), 2);
  const std::string log = connector->log();
  EXPECT_EQ(occurrences(log, "INFO attached"), 1u) << log;
  EXPECT_EQ(log.find("detached"), std::string::npos) << log;
}

TEST_F(Connect, ANewerAttachWithTheSameSecretStopsTheOlderWithExitCode3) {
  SwitchboardProcess sb(config());
  auto older = connect(sb, {}, "older.log");
  ASSERT_TRUE(wait_ready(sb, owner_.secret, "alpha")) << older->log();
  const pid_t older_server = older->server_pid();
  const auto newer = connect(sb, {}, "newer.log");
  EXPECT_EQ(older->wait_exit(), 3) << older->log();
  EXPECT_NE(older->log().find("a newer attach with this secret replaced this one"),
            std::string::npos);
  EXPECT_FALSE(process_alive(older_server));
  ASSERT_TRUE(sb.audit().wait_for_count("vm_attach", 2));
  EXPECT_TRUE(wait_ready(sb, owner_.secret, "alpha"));
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp/alpha", owner_.secret, "echo", json{{"n", 1}})),
            (json{{"n", 1}}));
}

TEST_F(Connect, ARevokedSecretStopsItWithExitCode4) {
  SwitchboardProcess sb(config());
  auto connector = connect(sb);
  ASSERT_TRUE(wait_ready(sb, owner_.secret, "alpha")) << connector->log();
  alpha_ = new_secret();
  sb.reload(config());
  EXPECT_EQ(connector->wait_exit(), 4) << connector->log();
  EXPECT_NE(connector->log().find("no longer accepts this secret"), std::string::npos);
}

TEST_F(Connect, A401WaitsAndTheSecretFileIsReadAgainBeforeTheNextDial) {
  SwitchboardProcess sb(config());
  secret_file(sb, new_secret().secret);
  ConnectProcess connector(argv(sb), sb.dir() / "connect.log");
  EXPECT_TRUE(connector.wait_log("refused the secret (401)")) << connector.log();
  secret_file(sb, alpha_.secret);
  EXPECT_TRUE(wait_ready(sb, owner_.secret, "alpha")) << connector.log();
}

TEST_F(Connect, SigtermClosesWith1000StopsTheServerAndExitsZero) {
  SwitchboardProcess sb(config());
  auto connector = connect(sb);
  ASSERT_TRUE(wait_ready(sb, owner_.secret, "alpha")) << connector->log();
  const pid_t server = connector->server_pid();
  ASSERT_GT(server, 0);
  ::kill(connector->pid(), SIGTERM);
  EXPECT_EQ(connector->wait_exit(), 0) << connector->log();
  const auto detach = sb.audit().wait_for("vm_detach");
  ASSERT_TRUE(detach);
  EXPECT_EQ((*detach)["code"], 1000);
  EXPECT_FALSE(process_alive(server));
}

TEST_F(Connect, PlainWsToAHostThatIsNotLoopbackIsRefusedUnlessAllowed) {
  TempDir dir;
  const CommandResult refused =
      run_command({(bin_dir() / "switchboard-connect").string(), "--url",
                   "ws://example.com/vm/attach", "--secret-file", "/nonexistent", "--", "true"},
                  dir.path());
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("in clear"), std::string::npos) << refused.err;
  const CommandResult no_command =
      run_command({(bin_dir() / "switchboard-connect").string(), "--url",
                   "ws://127.0.0.1:1/vm/attach", "--secret-file", "/nonexistent"},
                  dir.path());
  EXPECT_EQ(no_command.exit_code, 2);
  EXPECT_NE(no_command.err.find("command is required"), std::string::npos) << no_command.err;
  const CommandResult remote_upstream = run_command(
      {(bin_dir() / "switchboard-connect").string(), "--url", "ws://127.0.0.1:1/vm/attach",
       "--secret-file", "/nonexistent", "--upstream", "http://example.com/mcp"},
      dir.path());
  EXPECT_EQ(remote_upstream.exit_code, 2);
  EXPECT_NE(remote_upstream.err.find("only a server on this machine"), std::string::npos)
      << remote_upstream.err;
  const CommandResult both = run_command(
      {(bin_dir() / "switchboard-connect").string(), "--url", "ws://127.0.0.1:1/vm/attach",
       "--secret-file", "/nonexistent", "--upstream", "http://127.0.0.1:1/mcp", "--", "true"},
      dir.path());
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.err.find("not both"), std::string::npos) << both.err;
}

// The Streamable HTTP relay's full behaviour is checked by the MCP conformance suite
// through it (tests/conformance/run --via-connect-http); here, a server that is not there.
TEST_F(Connect, AnUpstreamThatCannotBeReachedFailsTheHandshakeAndIsTriedAgain) {
  SwitchboardProcess sb(config());
  secret_file(sb, alpha_.secret);
  ConnectProcess connector(
      {(bin_dir() / "switchboard-connect").string(), "--url",
       "ws://127.0.0.1:" + std::to_string(sb.port()) + "/vm/attach", "--secret-file",
       (sb.dir() / "alpha.secret").string(), "--name", "alpha", "--upstream",
       "http://127.0.0.1:" + std::to_string(free_port()) + "/mcp"},
      sb.dir() / "connect.log");
  // Its initialize is answered with an error, so the switchboard closes with 4005.
  const auto detach = sb.audit().wait_for("vm_detach");
  ASSERT_TRUE(detach) << connector.log();
  EXPECT_EQ((*detach)["code"], 4005);
  EXPECT_TRUE(connector.wait_log("the MCP server cannot be reached")) << connector.log();
  EXPECT_TRUE(sb.audit().wait_for_count("vm_attach", 2)) << connector.log();
  EXPECT_FALSE(computer_ready(sb, owner_.secret, "alpha"));
}

TEST_F(Connect, SettingsComeFromATomlFile) {
  SwitchboardProcess sb(config());
  const fs::path secret = secret_file(sb, alpha_.secret);
  const fs::path file = sb.dir() / "alpha.toml";
  std::ofstream(file) << "url = "
                      << toml_string("ws://127.0.0.1:" + std::to_string(sb.port()) + "/vm/attach")
                      << "\nsecret_file = " << toml_string(secret.string())
                      << "\nname = \"alpha\"\ncommand = ["
                      << toml_string((bin_dir() / "fake_stdio_server").string()) << "]\n";
  ConnectProcess connector({(bin_dir() / "switchboard-connect").string(), "-c", file.string()},
                           sb.dir() / "connect.log");
  ASSERT_TRUE(wait_ready(sb, owner_.secret, "alpha")) << connector.log();
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp/alpha", owner_.secret, "echo", json{{"f", 1}})),
            (json{{"f", 1}}));

  std::ofstream(file, std::ios::app) << "colour = \"blue\"\n";
  TempDir dir;
  const CommandResult unknown =
      run_command({(bin_dir() / "switchboard-connect").string(), "-c", file.string()}, dir.path());
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("unknown key `colour`"), std::string::npos) << unknown.err;
}

// A fake switchboard at the other end: FakePod answers the upgrade when the bearer is
// `secret`, and speaks JSON-RPC frames on the session.
class ConnectToFake : public ::testing::Test {
 protected:
  TempDir dir_;
  Secret secret_ = new_secret();

  std::unique_ptr<ConnectProcess> connect(const std::string& url, const std::string& log,
                                          std::vector<std::string> options = {}) {
    const fs::path secret_file = dir_.path() / "secret";
    std::ofstream(secret_file) << secret_.secret << "\n";
    std::vector<std::string> words{(bin_dir() / "switchboard-connect").string(),
                                   "--url",
                                   url,
                                   "--secret-file",
                                   secret_file.string(),
                                   "--name",
                                   "alpha"};
    words.insert(words.end(), options.begin(), options.end());
    words.push_back("--");
    words.push_back((bin_dir() / "fake_stdio_server").string());
    return std::make_unique<ConnectProcess>(words, dir_.path() / log);
  }
};

// A gateway that re-signs (a TLS-inspecting proxy) is trusted by adding its authority to
// the system's, never by turning the check off.
TEST_F(ConnectToFake, ACaFileAddsAuthoritiesToTheSystemsStore) {
  TestTimings timings("dial_backoff=100");
  const TestPki pki = make_test_pki(dir_.path(), "DNS:localhost");
  FakePod pod(FakePodOptions{.secret = secret_.secret,
                             .tls = PodTls{pki.server_certificate, pki.server_key}});
  const auto untrusted = connect(pod.url("alpha", "localhost"), "untrusted.log");
  EXPECT_TRUE(pod.wait_tls_failures(1, kDefaultWait)) << "the system's store alone refuses it";
  EXPECT_TRUE(untrusted->wait_log("TLS with localhost")) << untrusted->log();
  const auto trusted = connect(pod.url("alpha", "localhost"), "trusted.log",
                               {"--ca-file", pki.ca_certificate.string()});
  ASSERT_TRUE(pod.wait_sessions(1, kDefaultWait)) << trusted->log();
  const json reply = pod.request(rpc(1, "tools/list"));
  EXPECT_TRUE(reply.contains("result")) << reply << trusted->log();
}

TEST_F(ConnectToFake, OverWssTheCertificateAndItsHostNameAreChecked) {
  TestTimings timings("dial_backoff=100");
  const TestPki pki = make_test_pki(dir_.path(), "DNS:localhost");
  ScopedEnv trust("SSL_CERT_FILE", pki.ca_certificate.string());
  FakePod pod(FakePodOptions{.secret = secret_.secret,
                             .tls = PodTls{pki.server_certificate, pki.server_key}});
  const auto trusted = connect(pod.url("alpha", "localhost"), "trusted.log");
  ASSERT_TRUE(pod.wait_sessions(1, kDefaultWait)) << trusted->log();
  EXPECT_EQ(pod.dials().front().authorization, "Bearer " + secret_.secret);
  const json reply = pod.request(rpc(1, "tools/list"));
  ASSERT_TRUE(reply.contains("result")) << reply << trusted->log();
  EXPECT_EQ(reply["result"]["tools"].size(), 6u);

  // The certificate names localhost; dialled as 127.0.0.1 it is refused.
  const auto wrong_name = connect(pod.url("alpha", "127.0.0.1"), "wrong-name.log");
  EXPECT_TRUE(pod.wait_tls_failures(1, kDefaultWait));
  EXPECT_TRUE(wrong_name->wait_log("TLS with 127.0.0.1")) << wrong_name->log();
  EXPECT_EQ(pod.sessions(), 1u);
}

TEST_F(ConnectToFake, PingsWhileAttachedAndDropsALinkThatFellSilent) {
  TestTimings timings("dial_backoff=100,dial_ping=200,dial_silence=1000");
  FakePod answering(FakePodOptions{.secret = secret_.secret});
  const auto pinging = connect(answering.url("alpha"), "pinging.log");
  ASSERT_TRUE(answering.wait_sessions(1, kDefaultWait)) << pinging->log();
  EXPECT_TRUE(eventually([&] { return answering.pings_received() >= 3; }));
  EXPECT_EQ(answering.dial_count(), 1u) << "an answering link must stay up";

  FakePod silent(FakePodOptions{.secret = secret_.secret, .silent = true});
  const auto dropping = connect(silent.url("alpha"), "dropping.log");
  EXPECT_TRUE(silent.wait_dials(2, kDefaultWait)) << dropping->log();
  EXPECT_TRUE(dropping->wait_log("nothing heard from the switchboard in time")) << dropping->log();
}

}  // namespace
}  // namespace sbtest
