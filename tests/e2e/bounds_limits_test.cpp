// End to end: the switchboard under abuse (docs/robustness.md). Malformed requests get a
// status, an oversized body's 413 is read by a client that sends it all first, a
// half-closed caller gets its reply, idle and non-reading connections are closed, the
// connection cap holds, replies held for slow readers stay within the reply budget and are
// cut at the write deadline, and running out of descriptors fails only what needed one.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness/exposition.hpp"
#include "harness/kernel_sockets.hpp"
#include "harness/raw_socket.hpp"
#include "tests/e2e/e2e_helpers.hpp"

namespace sbtest {
namespace {

class Limits : public TwoComputersTest {
 protected:
  // POST /mcp with `body` exactly as given (post_mcp takes JSON, which would re-serialise it).
  HttpResponse post_text(int port, const std::string& body) const {
    return http(port, HttpRequest{.method = "POST",
                                  .target = "/mcp",
                                  .body = body,
                                  .token = owner_.secret,
                                  .headers = {{"Content-Type", "application/json"},
                                              {"Accept", "application/json, text/event-stream"}}});
  }

  std::string post_head(const std::string& path, std::size_t content_length,
                        const std::string& extra = "") const {
    return mcp_post_head(path, owner_.secret, content_length, extra);
  }
};

// A computer whose `echo` answers with `text` (a large reply); other tools as scripted.
FakeComputerOptions answering_echo_with(const std::string& text) {
  FakeComputerOptions options;
  options.on_call = [&text](const json& params) {
    if (params.value("name", "") != "echo") return scripted_by_arguments(params);
    return CallAction::result(json{{"content", json::array({{{"type", "text"}, {"text", text}}})}});
  };
  return options;
}

double connections_cut(int metrics_port, const std::string& cause) {
  const auto scrape = parse_exposition(http_get(metrics_port, "/metrics").body);
  return sample_value(scrape, "switchboard_http_connections_cut_total", {{"cause", cause}})
      .value_or(-1);
}

std::size_t open_descriptors(pid_t pid) {
  std::size_t count = 0;
  for ([[maybe_unused]] const auto& entry :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd"))
    ++count;
  return count;
}

TEST_F(Limits, MalformedRequestsAreAnsweredWithTheirStatusNotASilentClose) {
  SwitchboardProcess sb(config());
  struct Case {
    std::string what;
    std::string bytes;
    int status;
  };
  const std::vector<Case> cases = {
      {"junk request line", "NOT HTTP AT ALL\r\n\r\n", 400},
      {"head over 8 KiB",
       "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(9000, 'a') + "\r\n\r\n", 431},
      // Beast bounds the request line and the fields each by itself: together they count.
      {"head over 8 KiB in line and fields",
       "GET /" + std::string(6000, 'a') +
           " HTTP/1.1\r\nHost: x\r\nCookie: " + std::string(6000, 'b') + "\r\n\r\n",
       431},
      {"bad chunk size",
       "POST /mcp HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n", 400},
      {"conflicting Content-Length",
       "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", 400},
      {"a coding besides chunked",
       "POST /mcp HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501},
  };
  for (const auto& test : cases) {
    RawSocket socket(sb.port());
    ASSERT_TRUE(socket.send_all(test.bytes)) << test.what;
    const std::string answer = socket.read_to_end();
    EXPECT_EQ(final_status(answer), test.status) << test.what << ": " << answer;
    EXPECT_NE(answer.find("Connection: close"), std::string::npos) << test.what;
  }
  EXPECT_EQ(http_get(sb.port(), "/healthz").status, 200);
}

// A client such as Python's http.client sends the whole body before it reads anything:
// closing on it with its body unread would reset the connection and lose the 413.
TEST_F(Limits, AClientSendingAnOversizedBodyWholeStillReadsThe413) {
  SwitchboardProcess sb(config().block("[limits]\nmax_request_bytes = 4096\n"));
  RawSocket socket(sb.port());
  const std::string body(2 * 1024 * 1024, ' ');
  ASSERT_TRUE(socket.send_all(post_head("/mcp", body.size()) + body))
      << "the switchboard reset the connection while the body was still being sent";
  const std::string answer = socket.read_to_end();
  EXPECT_EQ(final_status(answer), 413) << answer;
  EXPECT_NE(answer.find("max_request_bytes"), std::string::npos) << answer;

  // The configured cap, not a fixed one: a body of exactly that size goes through.
  const std::string ping = rpc(1, "ping").dump();
  const std::string padded = ping + std::string(4096 - ping.size(), ' ');
  RawSocket within(sb.port());
  ASSERT_TRUE(within.send_all(post_head("/mcp", padded.size(), "Connection: close\r\n") + padded));
  EXPECT_EQ(final_status(within.read_to_end()), 200);
}

// A caller that never reads a large reply is cut at the write deadline with a reset: the
// kernel drops the unsent rest at once rather than keep the socket as an orphan, which
// nothing bounds (docs/robustness.md, "Connections and deadlines"). The cut is counted.
TEST_F(Limits, AConnectionCutAtTheWriteDeadlineLeavesNoOrphanInTheKernel) {
  const std::string large(10 * 1024 * 1024, 'x');
  const int metrics_port = free_port();
  SwitchboardProcess sb(
      config()
          .timeout_setting("write_secs", 1)
          .set("metrics_listen", toml_string("127.0.0.1:" + std::to_string(metrics_port))));
  auto alpha = attach_alpha(sb, answering_echo_with(large));
  ASSERT_TRUE(alpha);
  const std::string body = tool_call(1, "echo").dump();
  RawSocket unread(sb.port(), 4096);
  ASSERT_TRUE(unread.send_all(post_head("/mcp/alpha", body.size()) + body));
  EXPECT_TRUE(
      eventually([&] { return connections_cut(metrics_port, "write_deadline") == 1; }, 30s));
  EXPECT_EQ(orphans_holding_bytes(sb.port()).sockets, 0u);
  EXPECT_EQ(connections_cut(metrics_port, "lingering"), 0);
}

// A GET stream whose caller stops reading is cut at the write deadline in every revision
// that opens one, a 2025-11-25 stream (resumable, docs/protocol.md, "Resumable streams")
// as well as an older one.
TEST_F(Limits, AGetStreamWhoseCallerDoesNotReadIsCutAtTheWriteDeadlineInEveryRevision) {
  const int metrics_port = free_port();
  SwitchboardProcess sb(
      config()
          .timeout_setting("write_secs", 1)
          .set("metrics_listen", toml_string("127.0.0.1:" + std::to_string(metrics_port))));
  FakeComputerOptions options;
  options.more_capabilities = json{{"tools", {{"listChanged", true}}}};
  auto alpha = attach_alpha(sb, options);
  ASSERT_TRUE(alpha);
  const std::string change = json{{"jsonrpc", "2.0"},
                                  {"method", "notifications/tools/list_changed"},
                                  {"params", {{"padding", std::string(60 * 1024, 'x')}}}}
                                 .dump();
  double cuts = 0;
  for (const std::string revision : {"2025-06-18", "2025-11-25"}) {
    RawSocket unread(sb.port(), 4096);
    ASSERT_TRUE(unread.send_all(
        "GET /mcp/alpha HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + owner_.secret +
        "\r\nAccept: text/event-stream\r\nMCP-Protocol-Version: " + revision +
        "\r\nMcp-Session-Id: unread-" + revision + "\r\n\r\n"));
    ASSERT_TRUE(unread.read_until("\r\n\r\n")) << revision;
    ++cuts;
    EXPECT_TRUE(eventually(
        [&] {
          alpha->send_text(change);
          return connections_cut(metrics_port, "write_deadline") == cuts;
        },
        30s))
        << revision;
  }
}

// A refused client still sending when the lingering time is up is reset, and counted.
TEST_F(Limits, ARefusedClientStillSendingAfterTheLingeringTimeIsReset) {
  const TestTimings timings("lingering=1000");
  const int metrics_port = free_port();
  SwitchboardProcess sb(
      config()
          .block("[limits]\nmax_request_bytes = 4096\n")
          .set("metrics_listen", toml_string("127.0.0.1:" + std::to_string(metrics_port))));
  RawSocket socket(sb.port());
  ASSERT_TRUE(socket.send_all(post_head("/mcp", 1024 * 1024 * 1024)));
  ASSERT_TRUE(socket.read_until("\r\n\r\n"));
  EXPECT_TRUE(socket.send_until_refused(std::string(64 * 1024, ' '), 30s));
  EXPECT_TRUE(eventually([&] { return connections_cut(metrics_port, "lingering") == 1; }));
}

// Calls the switchboard does not relay (refused, or vm_status) cost a caller nothing to
// repeat: past [limits] audit_unrelayed_per_minute per caller and computer their lines are
// only counted, and summed up when the window ends (docs/protocol.md, "Audit log").
// Relayed calls, and other callers, keep every line.
TEST_F(Limits, UnrelayedCallLinesPastTheCapAreSummarisedWhenTheWindowEnds) {
  const TestTimings timings("audit_window=8000");  // 60 s for real; ample for 16 calls
  const Secret limited = new_secret();
  SwitchboardProcess sb(config()
                            .client("limited", limited, R"({ alpha = ["echo"] })", "alpha")
                            .block("[limits]\naudit_unrelayed_per_minute = 3\n"));
  auto alpha = attach_alpha(sb);
  ASSERT_TRUE(alpha);
  const auto by = [](const std::string& principal) {
    return fields_equal({{"principal", principal}});
  };
  for (int i = 0; i < 5; ++i) {
    call_tool(sb.port(), "/mcp/alpha", limited.secret, "screenshot", json::object(), 3 * i);
    call_tool(sb.port(), "/mcp/alpha", limited.secret, "vm_status", json::object(), 3 * i + 1);
    call_tool(sb.port(), "/mcp/alpha", limited.secret, "echo", json{{"n", i}}, 3 * i + 2);
  }
  call_tool(sb.port(), "/mcp/alpha", owner_.secret, "vm_status", json::object(), 99);
  ASSERT_TRUE(sb.audit().wait_for_count("call", 3 + 5 + 1));
  const auto summary = sb.audit().wait_for("unrelayed_calls_suppressed", {}, 20s);
  ASSERT_TRUE(summary) << "no summary after the window";
  EXPECT_EQ((*summary)["count"], 7);
  EXPECT_EQ((*summary)["principal"], "limited");
  EXPECT_EQ((*summary)["computer"], "alpha");
  EXPECT_EQ((*summary)["window_secs"], 8);
  EXPECT_EQ(sb.audit().count("unrelayed_calls_suppressed"), 1u);
  EXPECT_EQ(sb.audit().count("call", by("limited")), 3u + 5u);
  EXPECT_EQ(sb.audit().count("call", fields_equal({{"principal", "limited"}, {"tool", "echo"}})),
            5u);
  EXPECT_EQ(sb.audit().count("call", by("owner")), 1u);
  // A new window: written again.
  call_tool(sb.port(), "/mcp/alpha", limited.secret, "screenshot", json::object(), 100);
  EXPECT_TRUE(sb.audit().wait_for_count("call", 3 + 5 + 1, by("limited")));
}

TEST_F(Limits, AHalfClosedCallerStillGetsItsReply) {
  SwitchboardProcess sb(config());
  auto alpha = attach_alpha(sb);
  ASSERT_TRUE(alpha);
  const std::string body = tool_call(1, "echo", hold(1)).dump();
  RawSocket socket(sb.port());
  ASSERT_TRUE(socket.send_all(post_head("/mcp/alpha", body.size()) + body));
  ASSERT_TRUE(alpha->wait_for_calls(1));
  socket.shutdown_write();
  // The switchboard has seen the end of the request stream: it asks whether the caller is
  // still there, with an interim response every client skips.
  ASSERT_TRUE(socket.read_until("HTTP/1.1 100 Continue\r\n\r\n"));
  alpha->answer_echo(alpha->calls()[0]);
  const std::string answer = socket.read_to_end();
  ASSERT_EQ(final_status(answer), 200) << answer;
  const json reply = json::parse(answer.substr(answer.find("\r\n\r\n{") + 4), nullptr, false);
  EXPECT_EQ(echoed(reply), hold(1));
  ASSERT_TRUE(sb.audit().wait_for("call"));
  EXPECT_EQ(sb.audit().events("call")[0]["outcome"], "ok");
}

// With trust_peer_headers off, the audit names the socket only: anyone able to reach the
// listener could otherwise write any name there.
TEST_F(Limits, ForwardedIdentitiesAreIgnoredWhenPeerHeadersAreNotTrusted) {
  SwitchboardProcess sb(config().set("trust_peer_headers", "false"));
  HttpConnection connection(sb.port());
  const int port = connection.local_port();
  const auto response =
      connection.request(HttpRequest{.target = "/computers",
                                     .headers = {{"Tailscale-User-Login", "ops@example.com"},
                                                 {"X-Forwarded-For", "10.9.9.9"}}},
                         false);
  EXPECT_EQ(response.status, 401);
  ASSERT_TRUE(sb.audit().wait_for("client_auth_fail"));
  EXPECT_EQ(sb.audit().events("client_auth_fail")[0]["peer"], "127.0.0.1:" + std::to_string(port));
}

// A request that does not arrive whole in time is answered 408 before the close, so that
// its client learns why (docs/robustness.md, "Connections and deadlines"); a connection
// that sent nothing is closed without a word.
TEST_F(Limits, ARequestLeftIncompleteIsAnswered408) {
  const TestTimings timings("request_read=1000");
  SwitchboardProcess sb(config());
  RawSocket socket(sb.port());
  ASSERT_TRUE(socket.send_all("POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"js"));
  const std::string answer = socket.read_to_end(10s);
  EXPECT_EQ(answer.rfind("HTTP/1.1 408", 0), 0u) << answer;
  EXPECT_NE(answer.find("Connection: close"), std::string::npos) << answer;
  RawSocket silent(sb.port());
  EXPECT_EQ(silent.read_to_end(10s), "");
}

TEST_F(Limits, AnIdleKeepAliveConnectionIsClosedAfterIdleSecs) {
  SwitchboardProcess sb(config().timeout_setting("idle_secs", 1));
  HttpConnection connection(sb.port());
  EXPECT_EQ(connection.request(HttpRequest{.target = "/healthz"}).status, 200);
  EXPECT_TRUE(connection.wait_for_server_close(10s));
}

// Pipelined requests fill the server's send buffer when their answers are never read; the
// write deadline then ends the connection instead of holding it (and its buffers) forever.
TEST_F(Limits, APipeliningClientThatNeverReadsIsDisconnectedAtTheWriteDeadline) {
  SwitchboardProcess sb(config().timeout_setting("write_secs", 1));
  RawSocket socket(sb.port(), 4096);
  std::string requests;
  for (int i = 0; i < 64; ++i) requests += "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
  EXPECT_TRUE(socket.send_until_refused(requests, 30s));
  EXPECT_EQ(http_get(sb.port(), "/healthz").status, 200);
}

TEST_F(Limits, ConnectionsOverTheCapAreClosedAndThePlaceComesBack) {
  SwitchboardProcess sb(config().block("[limits]\nmax_connections = 8\n"));
  std::vector<std::unique_ptr<HttpConnection>> held;
  for (int i = 0; i < 8; ++i) {
    held.push_back(std::make_unique<HttpConnection>(sb.port()));
    EXPECT_EQ(held.back()->request(HttpRequest{.target = "/healthz"}).status, 200);
  }
  RawSocket ninth(sb.port());
  EXPECT_TRUE(ninth.closed_by_peer(10s));
  EXPECT_TRUE(
      eventually([&] { return sb.stderr_text().find("max_connections") != std::string::npos; }));
  held.pop_back();
  EXPECT_TRUE(eventually([&] {
    try {
      return http_get(sb.port(), "/healthz").status == 200;
    } catch (const std::exception&) {
      return false;
    }
  }));
}

// Replies waiting for callers that do not read are held to [limits] max_reply_buffer_mib:
// one over it is refused (the caller is told the switchboard is overloaded) while others
// are served, and the write deadline gives the budget back.
TEST_F(Limits, UnreadRepliesStayWithinTheBudgetAndAreCutAtTheWriteDeadline) {
  const std::string large(10 * 1024 * 1024, 'x');
  const auto options = answering_echo_with(large);
  SwitchboardProcess sb(
      config().timeout_setting("write_secs", 5).block("[limits]\nmax_reply_buffer_mib = 16\n"));
  auto alpha = attach_alpha(sb, options);
  ASSERT_TRUE(alpha);

  const std::string body = tool_call(1, "echo").dump();
  RawSocket unread(sb.port(), 4096);
  ASSERT_TRUE(unread.send_all(post_head("/mcp/alpha", body.size()) + body));
  ASSERT_TRUE(alpha->wait_for_calls(1));
  // The unread reply holds 10 of the 16 MiB: another one does not fit.
  const json refused = call_tool(sb.port(), "/mcp/alpha", owner_.secret, "echo", json::object(), 2);
  EXPECT_EQ(error_code(refused), kOverloaded) << refused.dump().substr(0, 200);
  // A small reply still fits.
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp/alpha", owner_.secret, "slow", json{{"n", 3}})),
            (json{{"n", 3}}));
  // The budget comes back once the write deadline has cut the reader that never read.
  json served;
  EXPECT_TRUE(eventually(
      [&] {
        served = call_tool(sb.port(), "/mcp/alpha", owner_.secret, "echo", json::object(), 4);
        return error_code(served) == 0;
      },
      30s));
  EXPECT_EQ(result_text(served).size(), large.size());
  EXPECT_LT(unread.read_to_end().size(), large.size()) << "the unread reply was not cut";
}

// A worker holds at most [limits] max_worker_buffer_mib (and the message it is reading) for
// a supervisor slower than its computer: past it, it reads the computer no further until
// the supervisor has taken some (docs/robustness.md, "Memory"). Here the supervisor is
// stopped while the computer answers 16 calls of 8 MiB each, 128 MiB in all; the budget
// is 16 MiB. Once every reply has gone, the worker gives the memory back, its read buffer's
// too once the computer has been quiet for a while.
TEST_F(Limits, AWorkerHoldsNoMoreThanItsBudgetForASupervisorThatDoesNotRead) {
  constexpr int kCalls = 16;
  const std::string large(8 * 1024 * 1024, 'x');
  // 128 MiB cross the relay in 16 MiB steps, and the callers are read one after another:
  // on a slow machine under AddressSanitizer that takes longer than the harness's 20 s call
  // timeout. The test is about memory, so no call or write may time out.
  SwitchboardProcess sb(ConfigBuilder()
                            .computer("alpha", alpha_, kCalls)
                            .client("owner", owner_, R"({ "*" = ["*"] })", "alpha", kCalls)
                            .timeouts(600, 5, {})
                            .timeout_setting("write_secs", 600)
                            .block("[limits]\nmax_worker_buffer_mib = 16\n"));
  auto alpha = attach_alpha(sb);
  ASSERT_TRUE(alpha);
  const pid_t worker = sb.worker("alpha")["pid"].get<pid_t>();
  std::vector<std::unique_ptr<RawSocket>> callers;
  for (int i = 0; i < kCalls; ++i) {
    const std::string body = tool_call(i, "echo", json{{"mode", "hold"}}).dump();
    callers.push_back(std::make_unique<RawSocket>(sb.port()));
    ASSERT_TRUE(callers.back()->send_all(
        post_head("/mcp/alpha", body.size(), "Connection: close\r\n") + body));
  }
  ASSERT_TRUE(alpha->wait_for_calls(kCalls));
  const long resting_kib = status_kib(worker, "VmRSS").value_or(0);

  sb.send_signal(SIGSTOP);
  for (const json& call : alpha->calls()) {
    alpha->answer(
        call.at("id").get<std::uint64_t>(),
        json{{"result", {{"content", json::array({{{"type", "text"}, {"text", large}}})}}}});
  }
  // Without the budget the worker takes all 128 MiB within this time; with it, most of the
  // replies stay with the computer until the supervisor reads again.
  EXPECT_FALSE(eventually([&] { return alpha->unwritten() == 0; }, 5s))
      << "the worker read every reply while the supervisor read none";
  sb.send_signal(SIGCONT);

  for (auto& caller : callers) {
    const std::string answer = caller->read_to_end(120s);
    EXPECT_EQ(final_status(answer), 200);
    EXPECT_GT(answer.size(), large.size());
  }
  EXPECT_FALSE(alpha->closed());
#ifdef SWITCHBOARD_SANITIZED
  // AddressSanitizer keeps freed memory in quarantine: resident sizes mean nothing here.
  return;
#endif
  // The budget, the message being read, the one being written, and room for the rest.
  const long peak_kib = status_kib(worker, "VmHWM").value_or(0);
  EXPECT_LT(peak_kib, resting_kib + (16 + 2 * 8 + 16) * 1024) << "peak " << peak_kib;
  EXPECT_TRUE(eventually([&] {
    return status_kib(worker, "VmRSS").value_or(0) < resting_kib + 4 * 1024;
  })) << "at rest "
      << status_kib(worker, "VmRSS").value_or(0) << " KiB, before " << resting_kib;
}

// max_inflight bounds replies held for callers too: a call's place is taken until its
// reply has been written, however slowly its caller reads.
TEST_F(Limits, AReplyKeepsItsCallsPlaceUntilItHasLeftTheSupervisor) {
  const std::string large(8 * 1024 * 1024, 'x');
  const auto options = answering_echo_with(large);
  SwitchboardProcess sb(ConfigBuilder()
                            .computer("alpha", alpha_, 1)
                            .client("owner", owner_, R"({ "*" = ["*"] })", "alpha"));
  auto alpha = attach_alpha(sb, options);
  ASSERT_TRUE(alpha);

  const std::string body = tool_call(1, "echo").dump();
  RawSocket slow_reader(sb.port(), 4096);
  ASSERT_TRUE(
      slow_reader.send_all(post_head("/mcp/alpha", body.size(), "Connection: close\r\n") + body));
  ASSERT_TRUE(alpha->wait_for_calls(1));
  EXPECT_EQ(error_code(call_tool(sb.port(), "/mcp/alpha", owner_.secret, "slow", json{{"n", 2}})),
            kOverloaded);
  EXPECT_EQ(alpha->calls().size(), 1u) << "the second call reached the computer";

  const std::string answer = slow_reader.read_to_end();
  EXPECT_EQ(final_status(answer), 200);
  EXPECT_GT(answer.size(), large.size());
  EXPECT_TRUE(eventually([&] {
    return echoed(call_tool(sb.port(), "/mcp/alpha", owner_.secret, "slow", json{{"n", 3}})) ==
           json{{"n", 3}};
  }));
}

// With its descriptors used up, the supervisor keeps running: a worker that dies cannot be
// restarted until descriptors are free again, and calls on connections already open go on.
TEST_F(Limits, OutOfDescriptorsTheSupervisorKeepsServingAndRestartsTheWorkerLater) {
  SwitchboardProcess sb(config());
  auto alpha = attach_alpha(sb);
  auto beta = attach_beta(sb);
  ASSERT_TRUE(alpha && beta);
  const pid_t beta_worker = sb.worker("beta")["pid"].get<pid_t>();
  HttpConnection open_before(sb.port());
  EXPECT_EQ(open_before.request(mcp_request("/mcp/alpha", owner_.secret, rpc(1, "ping"))).status,
            200);

  const rlim_t cap = open_descriptors(sb.pid()) + 8;
  const rlimit limit{cap, cap};
  ASSERT_EQ(::prlimit(sb.pid(), RLIMIT_NOFILE, &limit, nullptr), 0);
  std::vector<std::unique_ptr<RawSocket>> idle;
  for (int i = 0; i < 24; ++i) idle.push_back(std::make_unique<RawSocket>(sb.port()));
  ASSERT_TRUE(eventually([&] { return open_descriptors(sb.pid()) >= cap; }));
  ASSERT_TRUE(eventually(
      [&] { return sb.stderr_text().find("cannot accept connections") != std::string::npos; }));

  ASSERT_EQ(::kill(beta_worker, SIGKILL), 0);
  ASSERT_TRUE(eventually(
      [&] { return sb.stderr_text().find("cannot start a worker") != std::string::npos; }));
  // The other computer is still served on a connection that was already open.
  const auto during = open_before.request(
      mcp_request("/mcp/alpha", owner_.secret, tool_call(2, "echo", json{{"n", 2}})));
  EXPECT_EQ(echoed(during.json()), (json{{"n", 2}}));
  EXPECT_FALSE(sb.wait_exit(0ms).has_value()) << sb.stderr_text();

  idle.clear();
  auto beta_again = std::unique_ptr<FakeComputer>();
  ASSERT_TRUE(eventually(
      [&] {
        beta_again =
            std::make_unique<FakeComputer>(sb.port(), FakeComputerOptions{.secret = beta_.secret});
        return beta_again->attach() == 101;
      },
      30s));
  EXPECT_TRUE(wait_ready(sb, owner_.secret, "beta", 30s));
  EXPECT_FALSE(sb.wait_exit(0ms).has_value());
}

// A body the operator allowed but a frame to the worker cannot carry is refused before it is
// sent: passed on, it would end the worker's channel and the computer's session for every
// caller.
TEST_F(Limits, ARequestLargerThanAComputerMayBePassedIsRefusedAndTheComputerStays) {
  SwitchboardProcess sb(config().block("[limits]\nmax_request_bytes = 20971520\n"));
  auto alpha = attach_alpha(sb);
  ASSERT_TRUE(alpha);
  const json big = tool_call(1, "echo", json{{"text", std::string(16 * 1024 * 1024, 'x')}});
  const auto refused = post_text(sb.port(), big.dump());
  EXPECT_EQ(refused.status, 400) << refused.body.substr(0, 200);
  EXPECT_EQ(error_code(refused.json()), kInvalidRequest);
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp/alpha", owner_.secret, "echo", json::object(), 2)),
            json::object())
      << "the computer is still attached and served";
}

// MCP ids are strings or integers: one that would not come back as the caller wrote it
// is refused instead of answered under another text.
TEST_F(Limits, AnIdThatCannotComeBackAsSentIsAnInvalidRequest) {
  SwitchboardProcess sb(config());
  // 1e400 is beyond what a double holds: valid JSON all the same, not a parse error.
  for (const std::string id : {"18446744073709551616", "1.5", "1e2", "1e400"}) {
    const std::string body = R"({"jsonrpc":"2.0","id":)" + id + R"(,"method":"ping"})";
    const auto response = post_text(sb.port(), body);
    EXPECT_EQ(error_code(response.json()), kInvalidRequest) << id << ": " << response.body;
  }
  const json integer =
      post_mcp(sb.port(), "/mcp", owner_.secret,
               json::parse(R"({"jsonrpc":"2.0","id":18446744073709551615,"method":"ping"})"))
          .json();
  EXPECT_EQ(integer["id"].dump(), "18446744073709551615");
}

// JSON text never holds a NUL byte; a body with one is not read as what precedes it.
TEST_F(Limits, ABodyWithANulByteIsAParseError) {
  SwitchboardProcess sb(config());
  const std::string body = std::string(R"({"jsonrpc":"2.0","id":1,"method":"ping"})") +
                           std::string(1, '\0') + "anything";
  const auto response = post_text(sb.port(), body);
  EXPECT_EQ(error_code(response.json()), kParseError) << response.body;
}

TEST_F(Limits, AComputerSendingInvalidUtf8IsClosedWith1007AndAuditedSo) {
  SwitchboardProcess sb(config());
  auto alpha = attach_alpha(sb);
  ASSERT_TRUE(alpha);
  alpha->send_text("{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":\"\xff\xfe\"}");
  const auto info = alpha->wait_closed();
  ASSERT_TRUE(info);
  EXPECT_EQ(info->code, 1007);
  const auto detach = sb.audit().wait_for("vm_detach");
  ASSERT_TRUE(detach);
  EXPECT_EQ((*detach)["code"], 1007);
}

TEST_F(Limits, RepliesNoCallWaitsForAreDroppedAndLoggedOncePerMinute) {
  SwitchboardProcess sb(config());
  auto alpha = attach_alpha(sb);
  ASSERT_TRUE(alpha);
  for (int i = 0; i < 5; ++i) alpha->send_text(R"({"jsonrpc":"2.0","id":999,"result":{}})");
  // The computer is still served, and the log has one line for the five.
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp/alpha", owner_.secret, "echo", json{{"n", 1}})),
            (json{{"n", 1}}));
  const std::string needle = "reply no call waits for";
  ASSERT_TRUE(eventually([&] { return sb.stderr_text().find(needle) != std::string::npos; }));
  const std::string log = sb.stderr_text();
  EXPECT_EQ(log.find(needle), log.rfind(needle)) << log;
}

}  // namespace
}  // namespace sbtest
