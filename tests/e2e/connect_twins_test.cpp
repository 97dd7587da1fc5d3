// End to end: twins (docs/twins.md). Two switchboards with the same config, one
// switchboard-connect attached to both with one stdio server (support/fake_stdio_server.cpp):
// one counter seen through both boxes; progress and cancellation through each link reach
// their own caller; 4002 on one link leaves the other attached; both boxes answer a caller
// byte for byte alike and take each other's session ids. And behind real HAProxy with the
// shipped config (packaging/haproxy/switchboard-twins.cfg): a box killed with SIGKILL while
// callers loop through the front costs only the calls it had in flight, and its return
// costs none.
#include <signal.h>

#include <atomic>
#include <fstream>
#include <mutex>
#include <thread>

#include "harness/haproxy_front.hpp"
#include "harness/notify_socket.hpp"
#include "tests/e2e/connect_process.hpp"
#include "tests/e2e/e2e_helpers.hpp"

namespace sbtest {
namespace {

using harness::HaproxyFront;

class Twins : public AlphaTest {
 protected:
  // Redials in a tenth of a second, a 2 s grace for the server.
  TestTimings timings_{"dial_backoff=100,server_grace=2000"};
  Secret beta_ = new_secret();  // a second computer, for a box that must have one attached
  std::unique_ptr<SwitchboardProcess> one_ = std::make_unique<SwitchboardProcess>(twins_config());
  std::unique_ptr<SwitchboardProcess> two_ = std::make_unique<SwitchboardProcess>(twins_config());

  // The harness's timeouts, and a minute for `flood` (tens of MiB through a worker under
  // AddressSanitizer take seconds).
  ConfigBuilder twins_config() const {
    return config().computer("beta", beta_).timeouts(20, 5, {{"slow", 1}, {"flood", 60}});
  }

  static std::string attach_url(const SwitchboardProcess& sb) {
    return "ws://127.0.0.1:" + std::to_string(sb.port()) + "/vm/attach";
  }

  // switchboard-connect for alpha, attached to each of `boxes`.
  std::unique_ptr<ConnectProcess> connect(const std::vector<const SwitchboardProcess*>& boxes,
                                          const std::string& log = "connect.log") const {
    const fs::path secret = one_->dir() / "alpha.secret";
    std::ofstream(secret) << alpha_.secret << "\n";
    std::vector<std::string> words{(bin_dir() / "switchboard-connect").string()};
    for (const SwitchboardProcess* box : boxes) {
      words.push_back("--url");
      words.push_back(attach_url(*box));
    }
    for (const std::string& word :
         {std::string("--secret-file"), secret.string(), std::string("--name"),
          std::string("alpha"), std::string("--"), (bin_dir() / "fake_stdio_server").string()})
      words.push_back(word);
    return std::make_unique<ConnectProcess>(words, one_->dir() / log);
  }

  // One connect attached to both boxes, alpha ready on each (null, with the test failed,
  // otherwise).
  std::unique_ptr<ConnectProcess> connect_both() const {
    auto connector = connect({one_.get(), two_.get()});
    for (const SwitchboardProcess* box : {one_.get(), two_.get()}) {
      if (!wait_ready(*box, owner_.secret, "alpha")) {
        ADD_FAILURE() << "alpha never ready on :" << box->port() << "\n" << connector->log();
        return nullptr;
      }
    }
    return connector;
  }

  json count(const SwitchboardProcess& box) const {
    return echoed(call_tool(box.port(), "/mcp/alpha", owner_.secret, "count", json::object()));
  }
};

TEST_F(Twins, OneServerServesBothBoxesAndKeepsOneCounter) {
  const auto connector = connect_both();
  ASSERT_TRUE(connector);
  EXPECT_EQ(count(*one_), 1);
  EXPECT_EQ(count(*two_), 2);
  EXPECT_EQ(count(*one_), 3);
  const std::string log = connector->log();
  EXPECT_EQ(occurrences(log, "started the MCP server"), 1u) << log;
  EXPECT_EQ(occurrences(log, "server: initialized"), 1u) << log;
  EXPECT_NE(log.find("links_up=2 of 2"), std::string::npos) << log;
}

TEST_F(Twins, ReadyOnlyOnceALinkHasAttachedWithTheLinksUpAsItsStatus) {
  two_->stop();
  one_->stop();
  harness::NotifySocket notify(one_->dir() / "notify.sock");
  const auto connector = [&] {
    // Only switchboard-connect speaks to this socket, not the switchboards started later.
    const harness::ScopedEnv notify_env("NOTIFY_SOCKET", notify.path().string());
    return connect({one_.get(), two_.get()});
  }();
  // Both dials refused: not ready, and nothing said yet.
  ASSERT_TRUE(eventually([&] { return occurrences(connector->log(), "dial failed") >= 2; }))
      << connector->log();
  EXPECT_EQ(notify.next(std::chrono::milliseconds(0)), std::nullopt);

  two_->restart(/*same_port=*/true);
  EXPECT_EQ(notify.next(kDefaultWait), "STATUS=attached to 1 of 2 switchboards");
  EXPECT_EQ(notify.next(kDefaultWait), "READY=1");
  one_->restart(/*same_port=*/true);
  EXPECT_EQ(notify.next(kDefaultWait), "STATUS=attached to 2 of 2 switchboards");
  two_->stop();
  EXPECT_EQ(notify.next(kDefaultWait), "STATUS=attached to 1 of 2 switchboards");
}

TEST_F(Twins, ProgressThroughEachLinkReachesItsOwnCaller) {
  const auto connector = connect_both();
  ASSERT_TRUE(connector);
  for (const SwitchboardProcess* box : {one_.get(), two_.get()}) {
    const std::string token = "mine-" + std::to_string(box->port());
    json call = tool_call(7, "progress", json{{"box", box->port()}});
    call["params"]["_meta"] = {{"progressToken", token}};
    const HttpResponse response = http(
        box->port(), HttpRequest{.method = "POST",
                                 .target = "/mcp/alpha",
                                 .body = call.dump(),
                                 .token = owner_.secret,
                                 .headers = {{"Content-Type", "application/json"},
                                             {"Accept", "application/json, text/event-stream"}}});
    const auto messages = sse_messages(response.body);
    ASSERT_EQ(messages.size(), 3u) << response.body;
    EXPECT_EQ(messages[0]["params"]["progressToken"], token);
    EXPECT_EQ(messages[1]["params"]["progressToken"], token);
    EXPECT_EQ(echoed(messages[2]), (json{{"box", box->port()}}));
  }
}

TEST_F(Twins, ACancelThroughOneBoxCancelsItsCallAloneThoughBothUsedTheSameId) {
  const auto connector = connect_both();
  ASSERT_TRUE(connector);
  CallInFlight on_one(one_->port(), "/mcp/alpha", owner_.secret, "wait", json::object(), "w");
  ASSERT_TRUE(eventually([&] { return server_side_ids(connector->log(), "wait").size() == 1; }));
  CallInFlight on_two(two_->port(), "/mcp/alpha", owner_.secret, "wait", json::object(), "w");
  ASSERT_TRUE(eventually([&] { return server_side_ids(connector->log(), "wait").size() == 2; }));
  const auto ids = server_side_ids(connector->log(), "wait");
  ASSERT_NE(ids[0], ids[1]);

  const json cancel{{"jsonrpc", "2.0"},
                    {"method", "notifications/cancelled"},
                    {"params", {{"requestId", "w"}, {"reason", "two"}}}};
  EXPECT_EQ(post_mcp(two_->port(), "/mcp/alpha", owner_.secret, cancel).status, 202);
  EXPECT_TRUE(connector->wait_log("server: cancelled id=" + ids[1] + " reason=two"))
      << connector->log();
  EXPECT_EQ(error_code(on_two.wait()), -32800);
  EXPECT_FALSE(on_one.done());
  EXPECT_EQ(connector->log().find("server: cancelled id=" + ids[0]), std::string::npos);

  json cancel_one = cancel;
  cancel_one["params"]["reason"] = "one";
  EXPECT_EQ(post_mcp(one_->port(), "/mcp/alpha", owner_.secret, cancel_one).status, 202);
  EXPECT_TRUE(connector->wait_log("server: cancelled id=" + ids[0] + " reason=one"));
  EXPECT_EQ(error_code(on_one.wait()), -32800);
}

TEST_F(Twins, ReplacedOnOneBoxTheOtherLinkStaysAttached) {
  const auto connector = connect_both();
  ASSERT_TRUE(connector);
  EXPECT_EQ(count(*one_), 1);
  // A newer attach with the same secret, to box two only: it replaces that link (4002).
  const auto newer = connect({two_.get()}, "newer.log");
  ASSERT_TRUE(connector->wait_log("replaced this one; stopping this link")) << connector->log();
  ASSERT_TRUE(newer->wait_log("INFO attached")) << newer->log();
  EXPECT_TRUE(process_alive(connector->pid()));
  EXPECT_NE(connector->log().find("links_up=1 of 2"), std::string::npos) << connector->log();
  // Box one still reaches the first server (its counter goes on); box two the newer's.
  EXPECT_TRUE(wait_ready(*two_, owner_.secret, "alpha"));
  EXPECT_EQ(count(*one_), 2);
  EXPECT_EQ(count(*two_), 1);
}

// The log line that says `text`.
std::string line_of(const std::string& log, const std::string& text) {
  const auto at = log.find(text);
  if (at == std::string::npos) return "";
  const auto start = log.rfind('\n', at) + 1;  // npos + 1 is 0: the first line
  return log.substr(start, log.find('\n', at) - start);
}

TEST_F(Twins, ARevokedSecretStopsThatBoxsLinkAloneAndTheLastLinkToStopSetsTheExitStatus) {
  const auto connector = connect_both();
  ASSERT_TRUE(connector);
  // Box two's link is replaced by a newer attach there (4002, exit status 3 if it were the
  // last), then box one stops accepting the secret (4003, exit status 4).
  const auto newer = connect({two_.get()}, "newer.log");
  ASSERT_TRUE(connector->wait_log("replaced this one; stopping this link")) << connector->log();
  EXPECT_EQ(count(*one_), 1);  // box one still reaches the server
  EXPECT_EQ(connector->wait_exit(std::chrono::milliseconds(0)), std::nullopt);

  alpha_ = new_secret();
  one_->reload(twins_config());
  EXPECT_EQ(connector->wait_exit(), 4) << connector->log();
  const std::string log = connector->log();
  EXPECT_NE(line_of(log, "replaced this one").find("url=" + attach_url(*two_)), std::string::npos)
      << log;
  EXPECT_NE(line_of(log, "no longer accepts this secret").find("url=" + attach_url(*one_)),
            std::string::npos)
      << log;
}

TEST_F(Twins, AServerThatExitsEndsEveryAttachAndOneNewServerServesBoth) {
  const auto connector = connect_both();
  ASSERT_TRUE(connector);
  EXPECT_EQ(count(*two_), 1);
  const pid_t first = connector->server_pid();
  EXPECT_EQ(
      error_code(call_tool(one_->port(), "/mcp/alpha", owner_.secret, "exit", json::object())),
      kDisconnected);
  for (const SwitchboardProcess* box : {one_.get(), two_.get()}) {
    const auto detach = box->audit().wait_for("vm_detach");
    ASSERT_TRUE(detach) << connector->log();
    EXPECT_EQ((*detach)["code"], 1011);
    ASSERT_TRUE(box->audit().wait_for_count("vm_attach", 2)) << connector->log();
    ASSERT_TRUE(wait_ready(*box, owner_.secret, "alpha"));
  }
  EXPECT_FALSE(process_alive(first));
  EXPECT_EQ(occurrences(connector->log(), "started the MCP server"), 2u) << connector->log();
  // One new server, one new session, one counter for both boxes.
  EXPECT_EQ(count(*one_), 1);
  EXPECT_EQ(count(*two_), 2);
}

TEST_F(Twins, ALinkWhoseSwitchboardStopsReadingNeverHoldsBackTheOther) {
  const auto connector = connect_both();
  ASSERT_TRUE(connector);
  // Box two's worker for alpha stops: nothing reads that link any more.
  const pid_t stalled = two_->worker("alpha")["pid"].get<pid_t>();
  ASSERT_EQ(::kill(stalled, SIGSTOP), 0);
  // 64 notifications of 1 MiB go to every link: more than a link's queue (32 MiB) and the
  // sockets between (about 10 MiB on loopback) can hold. Box one's caller gets its answer,
  // and box two's link is dropped rather than queued without end.
  const json flood{{"count", 64}, {"bytes", 1 << 20}};
  EXPECT_EQ(echoed(call_tool(one_->port(), "/mcp/alpha", owner_.secret, "flood", flood)), flood);
  const std::string two_detached = "detached computer=alpha url=" + attach_url(*two_);
  EXPECT_TRUE(eventually([&] { return connector->log().find(two_detached) != std::string::npos; },
                         std::chrono::seconds(20)))
      << connector->log();
  EXPECT_EQ(count(*one_), 1);
  ::kill(stalled, SIGCONT);
}

TEST_F(Twins, BothBoxesAnswerACallerByteForByteAlikeAndTakeEachOthersSessions) {
  const auto connector = connect_both();
  ASSERT_TRUE(connector);
  const auto same = [&](const std::function<HttpResponse(const SwitchboardProcess&)>& ask,
                        const std::string& what) {
    const HttpResponse from_one = ask(*one_);
    const HttpResponse from_two = ask(*two_);
    EXPECT_EQ(from_one.status, from_two.status) << what;
    EXPECT_EQ(from_one.body, from_two.body) << what;
  };
  same(
      [&](const auto& box) {
        return post_mcp(box.port(), "/mcp/alpha", owner_.secret, rpc(1, "tools/list"));
      },
      "tools/list");
  same([&](const auto& box) { return http_get(box.port(), "/computers", owner_.secret); },
       "/computers");
  same([&](const auto& box) { return http_get(box.port(), "/readyz/alpha", owner_.secret); },
       "/readyz/alpha");
  same([&](const auto& box) { return http_get(box.port(), "/readyz"); }, "/readyz");
  same(
      [&](const auto& box) {
        return post_mcp(box.port(), "/mcp/alpha", "wrong", rpc(1, "tools/list"));
      },
      "a wrong token");
  same(
      [&](const auto& box) {
        return post_mcp(box.port(), "/mcp/nowhere", owner_.secret, rpc(1, "tools/list"));
      },
      "an unknown computer");
  same(
      [&](const auto& box) {
        return post_mcp(box.port(), "/mcp/alpha", alice_.secret,
                        tool_call(1, "count", json::object()));
      },
      "a tool not granted");
  same(
      [&](const auto& box) {
        return post_mcp(box.port(), "/mcp/alpha", owner_.secret, rpc(1, "no/such/method"));
      },
      "an unknown method");

  // A session made on box one is a session on box two.
  const HttpResponse initialized =
      post_mcp(one_->port(), "/mcp/alpha", owner_.secret,
               rpc(1, "initialize",
                   json{{"protocolVersion", "2025-11-25"},
                        {"capabilities", json::object()},
                        {"clientInfo", {{"name", "twins"}, {"version", "1"}}}}));
  const auto session = initialized.header("Mcp-Session-Id");
  ASSERT_TRUE(session) << initialized.body;
  const HttpResponse called =
      http(two_->port(), HttpRequest{.method = "POST",
                                     .target = "/mcp/alpha",
                                     .body = tool_call(2, "echo", json{{"s", 1}}).dump(),
                                     .token = owner_.secret,
                                     .headers = {{"Content-Type", "application/json"},
                                                 {"Accept", "application/json, text/event-stream"},
                                                 {"MCP-Protocol-Version", "2025-11-25"},
                                                 {"Mcp-Session-Id", *session}}});
  EXPECT_EQ(called.status, 200) << called.body;
  EXPECT_EQ(echoed(called.final_message()), (json{{"s", 1}})) << called.body;
}

// A POST to a box, with the header a twin front adds or without it.
HttpResponse post_to(const SwitchboardProcess& box, const std::string& token, const json& body,
                     bool twin_front) {
  HttpRequest request = mcp_request("/mcp/alpha", token, body);
  if (twin_front) request.headers.emplace_back("Switchboard-Twin", "1");
  return http(box.port(), request);
}

TEST_F(Twins, ATwinFrontIsToldWith503ThatTheComputerIsNotAttachedHereAndNoOneElseIs) {
  const auto connector = connect({two_.get()});
  ASSERT_TRUE(wait_ready(*two_, owner_.secret, "alpha")) << connector->log();
  for (const json& body : {tool_call(1, "echo", json{{"x", 1}}), rpc(2, "tools/list")}) {
    const HttpResponse plain = post_to(*one_, owner_.secret, body, false);
    const HttpResponse fronted = post_to(*one_, owner_.secret, body, true);
    EXPECT_EQ(plain.status, 200) << body;
    EXPECT_FALSE(plain.has_header("Switchboard-Not-Attached")) << body;
    EXPECT_EQ(fronted.status, 503) << body;
    EXPECT_EQ(fronted.header("Switchboard-Not-Attached"), "1") << body;
    EXPECT_EQ(fronted.body, plain.body) << body;
  }
  // Where the computer is attached the header changes nothing.
  const HttpResponse attached =
      post_to(*two_, owner_.secret, tool_call(1, "echo", json{{"x", 1}}), true);
  EXPECT_EQ(attached.status, 200);
  EXPECT_FALSE(attached.has_header("Switchboard-Not-Attached"));
  EXPECT_EQ(echoed(attached.final_message()), (json{{"x", 1}}));
}

// The haproxy program, or nullopt for the test to skip; a failure as well when it is
// missing under SWITCHBOARD_REQUIRE_HAPROXY (CI), where skipping would hide the tests.
std::optional<fs::path> haproxy_program() {
  auto program = HaproxyFront::find();
  if (!program && std::getenv("SWITCHBOARD_REQUIRE_HAPROXY"))
    ADD_FAILURE() << "haproxy is not installed (Debian: haproxy) and SWITCHBOARD_REQUIRE_HAPROXY "
                     "is set";
  return program;
}

fs::path shipped_twins_config() {
  return harness::source_dir() / "packaging/haproxy/switchboard-twins.cfg";
}

TEST_F(Twins, BehindHaproxyAComputerAttachedToOneBoxIsServedThroughItAlone) {
  const auto program = haproxy_program();
  if (!program) GTEST_SKIP() << "haproxy is not installed (Debian: haproxy)";
  auto connector = connect({two_.get()});
  ASSERT_TRUE(wait_ready(*two_, owner_.secret, "alpha")) << connector->log();
  // With beta attached box one is ready for the front (/readyz names no computer), so it
  // gets its share of alpha's calls too.
  const auto beta = attach_ready(*one_, beta_, "beta", owner_.secret);
  ASSERT_TRUE(beta);
  HaproxyFront front(*program, shipped_twins_config(), one_->port(), two_->port());
  for (int n = 0; n < 40; ++n) {
    const HttpResponse response =
        post_mcp(front.port(), "/mcp/alpha", owner_.secret, tool_call(n, "echo", json{{"n", n}}));
    ASSERT_EQ(response.status, 200) << response.body << front.log();
    ASSERT_EQ(echoed(response.final_message()), (json{{"n", n}})) << response.body;
  }
  EXPECT_TRUE(one_->audit().wait_for("call", fields_equal({{"outcome", "not_attached"}})))
      << front.log();

  // Attached nowhere: the caller gets the switchboard's usual answer, 200 and all.
  connector.reset();
  ASSERT_TRUE(eventually(
      [&] { return http_get(two_->port(), "/readyz/alpha", owner_.secret).status == 503; }));
  const HttpResponse offline =
      post_mcp(front.port(), "/mcp/alpha", owner_.secret, tool_call(99, "echo", json{{"n", 99}}));
  EXPECT_EQ(offline.status, 200) << offline.body;
  EXPECT_FALSE(offline.has_header("Switchboard-Not-Attached"));
  EXPECT_EQ(offline.body,
            post_to(*two_, owner_.secret, tool_call(99, "echo", json{{"n", 99}}), false).body);
}

// One call as a caller loops them: when it started, and whether it was answered.
struct LoopedCall {
  Clock::time_point started;
  bool answered = false;
};

// Callers calling `echo` through `port` one call after another until stopped.
class CallerLoop {
 public:
  CallerLoop(int port, std::string token, int callers) {
    for (int caller = 0; caller < callers; ++caller) {
      threads_.emplace_back([this, port, token, caller] {
        for (int n = 0; !stop_; ++n) {
          LoopedCall call{.started = Clock::now()};
          try {
            const json arguments{{"caller", caller}, {"n", n}};
            const HttpResponse response =
                post_mcp(port, "/mcp/alpha", token, tool_call(n, "echo", arguments));
            call.answered = response.status == 200 && echoed(response.final_message()) == arguments;
          } catch (const std::exception&) {
            call.answered = false;
          }
          const std::lock_guard lock(mutex_);
          calls_.push_back(call);
        }
      });
    }
  }
  ~CallerLoop() { stop(); }

  void stop() {
    stop_ = true;
    for (auto& thread : threads_)
      if (thread.joinable()) thread.join();
  }
  // Calls that started after `since` and have ended: how many, and how many failed.
  std::pair<std::size_t, std::size_t> ended_since(Clock::time_point since) const {
    const std::lock_guard lock(mutex_);
    std::size_t ended = 0, failed = 0;
    for (const LoopedCall& call : calls_) {
      if (call.started < since) continue;
      ++ended;
      if (!call.answered) ++failed;
    }
    return {ended, failed};
  }

 private:
  std::atomic<bool> stop_{false};
  mutable std::mutex mutex_;
  std::vector<LoopedCall> calls_;
  std::vector<std::thread> threads_;
};

// Calls the box relayed and its computer answered (a call it sent on to the twin, not
// attached there, is audited `not_attached`).
std::size_t calls_served(const SwitchboardProcess& box) {
  return occurrences(read_file(box.audit_path()), "\"outcome\":\"ok\"");
}

TEST_F(Twins, BehindHaproxyAKilledBoxCostsOnlyItsCallsInFlightAndItsReturnNone) {
  const auto program = haproxy_program();
  if (!program) GTEST_SKIP() << "haproxy is not installed (Debian: haproxy)";
  const auto connector = connect_both();
  ASSERT_TRUE(connector);
  HaproxyFront front(*program, shipped_twins_config(), one_->port(), two_->port());
  const auto began = Clock::now();
  CallerLoop callers(front.port(), owner_.secret, 4);
  // Both boxes serve callers through the front.
  ASSERT_TRUE(eventually([&] { return calls_served(*one_) >= 10 && calls_served(*two_) >= 10; }))
      << front.log();
  EXPECT_EQ(callers.ended_since(began).second, 0u) << front.log();

  one_->send_signal(SIGKILL);
  ASSERT_TRUE(one_->wait_exit(std::chrono::seconds(10)));
  // Whatever started from now on found box one gone: none of it may fail.
  const auto gone = Clock::now();
  ASSERT_TRUE(eventually([&] { return callers.ended_since(gone).first >= 100; })) << front.log();
  EXPECT_EQ(callers.ended_since(gone).second, 0u) << front.log();

  const std::size_t served_before = calls_served(*one_);
  one_->restart(/*same_port=*/true);
  // Its link attaches again, and the front sends it callers again.
  EXPECT_TRUE(eventually([&] { return occurrences(connector->log(), "links_up=2 of 2") >= 2; }))
      << connector->log();
  EXPECT_TRUE(eventually([&] { return calls_served(*one_) >= served_before + 10; },
                         std::chrono::seconds(20)))
      << front.log();
  callers.stop();
  const auto [ended, failed] = callers.ended_since(gone);
  EXPECT_EQ(failed, 0u) << ended << " calls since box one was killed\n" << front.log();
}

}  // namespace
}  // namespace sbtest
