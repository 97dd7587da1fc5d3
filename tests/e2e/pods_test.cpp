// End to end: [[pty_attach]] (docs/protocol.md, "Pod sessions" and "Pod redial"). The real
// switchboard dials fake openab-pty pods (WebSocket servers on loopback, plain or TLS) and
// lends them computers that fake daemons attached over GET /vm/attach. Covered: what the
// pod is answered, which computer it reaches, reload, the per-caller cap and the
// 64-request ceiling, progress and cancellation (docs/protocol.md), and the redial and stop
// rules for drops, close codes and refused upgrades. Every wait is bounded polling; the
// "did not redial" checks wait about three seconds, well past the first backoff (≤1.2 s).
#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <fstream>

#include "harness/fake_pod.hpp"
#include "harness/test_pki.hpp"
#include "tests/e2e/e2e_helpers.hpp"

namespace sbtest {
namespace {

constexpr auto kNoRedialWindow = std::chrono::seconds(3);
constexpr int kMethodNotFoundCode = -32601;

// One [[pty_attach]] block.
struct AttachBlock {
  std::string name;
  std::string url;
  fs::path secret_file;
  std::string tools = R"(["*"])";
  std::optional<std::string> computer;
  std::optional<int> max_inflight;

  std::string toml() const {
    std::string out =
        "[[pty_attach]]\nname = " + json(name).dump() + "\nurl = " + json(url).dump() +
        "\nsecret_file = " + json(secret_file.string()).dump() + "\ntools = " + tools + "\n";
    if (computer) out += "computer = " + json(*computer).dump() + "\n";
    if (max_inflight) out += "max_inflight = " + std::to_string(*max_inflight) + "\n";
    return out;
  }
};

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

bool stderr_says(const SwitchboardProcess& sb, const std::string& text,
                 std::chrono::milliseconds timeout = kDefaultWait) {
  return eventually([&] { return sb.stderr_text().find(text) != std::string::npos; }, timeout);
}

// Sets an environment variable for the switchboard started in its scope (children inherit
// the test's environment at spawn).
class ScopedEnv {
 public:
  ScopedEnv(std::string name, const std::string& value) : name_(std::move(name)) {
    ::setenv(name_.c_str(), value.c_str(), 1);
  }
  ~ScopedEnv() { ::unsetenv(name_.c_str()); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
};

json initialize_request(int id) {
  return rpc(id, "initialize",
             json{{"protocolVersion", "2025-06-18"},
                  {"capabilities", json::object()},
                  {"clientInfo", {{"name", "openab-pty"}, {"version", "0.0.0"}}}});
}

json hold_call(int id) {
  return tool_call(id, "echo", json{{"mode", "hold"}, {"n", id}});
}

class PtyAttachE2e : public ::testing::Test {
 protected:
  TempDir scratch_;  // grants and certificates
  Secret alpha_ = new_secret();
  Secret beta_ = new_secret();
  Secret owner_ = new_secret();
  std::string grant_ = new_secret().secret;  // what the pod minted for the session

  // A secret_file holding the grant, with the trailing newline an editor leaves.
  fs::path grant_file(const std::string& name = "grant") {
    const fs::path path = scratch_.path() / (name + ".secret");
    write_text(path, grant_ + "\n");
    return path;
  }

  ConfigBuilder one_computer(std::optional<int> computer_max_inflight = {}) const {
    return ConfigBuilder()
        .computer("alpha", alpha_, computer_max_inflight)
        .client("owner", owner_, R"({ "*" = ["*"] })", "alpha");
  }

  // The switchboard with "alpha" attached and ready, and a pod it has dialled through one
  // [[pty_attach]] block "kiro" that lends "alpha".
  struct Lent {
    std::unique_ptr<FakePod> pod;
    std::unique_ptr<SwitchboardProcess> sb;
    std::unique_ptr<FakeComputer> computer;
  };

  struct LendOptions {
    std::string tools = R"(["*"])";
    std::optional<int> max_inflight;           // the attach's
    std::optional<int> computer_max_inflight;  // alpha's
  };

  Lent lend_alpha(const LendOptions& options) {
    Lent lent;
    lent.pod = std::make_unique<FakePod>(FakePodOptions{.secret = grant_});
    lent.sb = std::make_unique<SwitchboardProcess>(
        one_computer(options.computer_max_inflight)
            .block(AttachBlock{.name = "kiro",
                               .url = lent.pod->url("laptop"),
                               .secret_file = grant_file(),
                               .tools = options.tools,
                               .max_inflight = options.max_inflight}
                       .toml()));
    lent.computer = attach_ready(*lent.sb, alpha_, "alpha", owner_.secret);
    EXPECT_TRUE(lent.computer);
    if (lent.computer) {
      EXPECT_TRUE(lent.pod->wait_sessions(1, kDefaultWait)) << lent.sb->stderr_text();
    }
    return lent;
  }

  // Lent through an attach capped at one call, which the pod has used up: the computer
  // holds call 1.
  Lent start_with_held_call() {
    Lent lent = lend_alpha({.max_inflight = 1});
    if (HasFailure()) return lent;
    lent.pod->send(hold_call(1));
    EXPECT_TRUE(lent.computer->wait_for_calls(1));
    return lent;
  }
};

// ---------------------------------------------------------------------------------------
// What the pod is answered

TEST_F(PtyAttachE2e, LendsTheComputerAndHonoursAStopCode) {
  const auto lent = lend_alpha({.tools = R"(["echo"])"});
  ASSERT_FALSE(HasFailure());
  auto& pod = *lent.pod;
  auto& sb = *lent.sb;
  const auto& computer = lent.computer;

  // The dial: the grant (trimmed) as a bearer token and no other credential.
  const PodDial dial = pod.dials().at(0);
  EXPECT_EQ(dial.target, "/tools/attach/laptop");
  EXPECT_EQ(dial.authorization, "Bearer " + grant_);
  EXPECT_FALSE(dial.has_header("Origin"));
  EXPECT_FALSE(dial.has_header("Sec-WebSocket-Protocol"));
  EXPECT_FALSE(dial.has_header("Cookie"));

  const json init = pod.request(initialize_request(1));
  ASSERT_TRUE(init.is_object()) << "no answer to initialize";
  EXPECT_TRUE(init["id"].is_number_integer());
  EXPECT_EQ(init["id"], 1);
  EXPECT_EQ(init["result"]["serverInfo"]["name"], "openab-sb");
  EXPECT_EQ(init["result"]["protocolVersion"], "2025-06-18");
  EXPECT_NE(init["result"]["instructions"].get<std::string>().find("`alpha`"), std::string::npos);
  pod.send(json{{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});

  EXPECT_EQ(pod.request(rpc(2, "ping"))["result"], json::object());
  EXPECT_EQ(tool_names(pod.request(rpc(3, "tools/list"))),
            (std::vector<std::string>{"echo", "vm_status"}));

  const json call = pod.request(tool_call(4, "echo", json{{"text", "hi"}}));
  EXPECT_TRUE(call["id"].is_number_integer());
  EXPECT_EQ(call["id"], 4);
  EXPECT_EQ(echoed(call), json({{"text", "hi"}}));

  const json denied = pod.request(tool_call(5, "secret_tool"));
  EXPECT_EQ(denied["result"]["isError"], true);
  const std::string why = result_text(denied);
  EXPECT_NE(why.find("`kiro`"), std::string::npos) << why;
  EXPECT_NE(why.find("`alpha`"), std::string::npos) << why;

  const json status = pod.request(tool_call(6, "vm_status"));
  const json& reported = status["result"]["structuredContent"];
  EXPECT_EQ(reported["computer"], "alpha");
  EXPECT_EQ(reported["ready"], true);
  EXPECT_FALSE(reported.contains("peer")) << "an attach is a named caller";
  EXPECT_FALSE(reported.contains("in_flight"));

  EXPECT_EQ(pod.request(rpc(7, "resources/list"))["error"]["code"], kMethodNotFoundCode);
  pod.send_text("not json");
  pod.send(json{{"jsonrpc", "2.0"}, {"id", 99}, {"result", json::object()}});  // a response
  EXPECT_EQ(pod.request(rpc(8, "ping"))["id"], 8);

  // Only echo reached the computer; the pod was sent answers and nothing else.
  EXPECT_EQ(computer->calls().size(), 1u);
  for (const auto& message : pod.messages()) {
    EXPECT_TRUE(message.is_object() && message.contains("id") && !message.contains("method"))
        << message.dump();
  }
  EXPECT_EQ(pod.messages().size(), 8u);

  const auto& audit = sb.audit();
  EXPECT_TRUE(
      audit.wait_for("pty_attach", fields_equal({{"attach", "kiro"}, {"computer", "alpha"}})));
  EXPECT_TRUE(audit.wait_for(
      "call",
      fields_equal(
          {{"principal", "kiro"}, {"computer", "alpha"}, {"tool", "echo"}, {"outcome", "ok"}})));
  EXPECT_TRUE(audit.wait_for(
      "call",
      fields_equal({{"principal", "kiro"}, {"tool", "secret_tool"}, {"outcome", "denied"}})));

  // 4004: the session ended. The attacher stops for good.
  pod.close(4004);
  EXPECT_TRUE(audit.wait_for(
      "pty_detach", fields_equal({{"attach", "kiro"}, {"computer", "alpha"}, {"code", 4004}})));
  EXPECT_TRUE(
      audit.wait_for("pty_attach_stopped", fields_equal({{"attach", "kiro"}, {"code", 4004}})));
  EXPECT_FALSE(pod.wait_dials(2, kNoRedialWindow)) << "redialled after a stop code";
  EXPECT_TRUE(stderr_says(sb, "not redialling"));
  EXPECT_EQ(sb.stderr_text().find(grant_), std::string::npos) << "the grant was logged";
  EXPECT_EQ(audit.text().find(grant_), std::string::npos) << "the grant was audited";
}

// A reply large enough that an HTTP caller gets it as it arrives (docs/architecture.md,
// "Large replies") reaches a pod whole, in one WebSocket message, under the pod's own id.
TEST_F(PtyAttachE2e, APodsLargeReplyArrivesWhole) {
  const auto lent = lend_alpha({});
  ASSERT_FALSE(HasFailure());
  const json arguments{{"text", std::string(600 * 1024, 'x')}};
  const json call = lent.pod->request(tool_call(4, "echo", arguments));
  ASSERT_TRUE(call.is_object()) << "no answer";
  EXPECT_EQ(call["id"], 4);
  EXPECT_TRUE(echoed(call) == arguments) << call.dump().substr(0, 200);
}

TEST_F(PtyAttachE2e, LendsTheComputerItNamesNotTheFirstConfigured) {
  FakePod pod({.secret = grant_});
  SwitchboardProcess sb(ConfigBuilder()
                            .computer("alpha", alpha_)
                            .computer("beta", beta_)
                            .client("owner", owner_, R"({ "*" = ["*"] })", "alpha")
                            .block(AttachBlock{.name = "kiro",
                                               .url = pod.url("laptop"),
                                               .secret_file = grant_file(),
                                               .computer = "beta"}
                                       .toml()));
  const auto alpha = attach_ready(sb, alpha_, "alpha", owner_.secret);
  const auto beta = attach_ready(sb, beta_, "beta", owner_.secret);
  ASSERT_TRUE(alpha && beta);
  ASSERT_TRUE(pod.wait_sessions(1, kDefaultWait)) << sb.stderr_text();

  // No initialize first: a pod that calls a tool straight away is served.
  const json call = pod.request(tool_call(1, "echo", json{{"to", "beta"}}));
  EXPECT_EQ(echoed(call), json({{"to", "beta"}}));
  EXPECT_EQ(beta->calls().size(), 1u);
  EXPECT_EQ(alpha->calls().size(), 0u);

  const json init = pod.request(initialize_request(2));
  const std::string instructions = init["result"]["instructions"];
  EXPECT_NE(instructions.find("`beta`"), std::string::npos) << instructions;
  EXPECT_EQ(instructions.find("`alpha`"), std::string::npos) << instructions;
  EXPECT_EQ(pod.request(tool_call(3, "vm_status"))["result"]["structuredContent"]["computer"],
            "beta");
  EXPECT_TRUE(
      sb.audit().wait_for("pty_attach", fields_equal({{"attach", "kiro"}, {"computer", "beta"}})));
}

// ---------------------------------------------------------------------------------------
// Reload

TEST_F(PtyAttachE2e, KeepsServingThePodThroughASameVerifierRename) {
  FakePod pod({.secret = grant_});
  const fs::path grant = grant_file();
  const auto attach = [&](const std::string& computer, const std::string& tools) {
    return AttachBlock{.name = "kiro",
                       .url = pod.url("laptop"),
                       .secret_file = grant,
                       .tools = tools,
                       .computer = computer}
        .toml();
  };
  SwitchboardProcess sb(one_computer().block(attach("alpha", R"(["echo"])")));
  const auto computer = attach_ready(sb, alpha_, "alpha", owner_.secret);
  ASSERT_TRUE(computer);
  ASSERT_TRUE(pod.wait_sessions(1, kDefaultWait)) << sb.stderr_text();
  EXPECT_EQ(echoed(pod.request(tool_call(1, "echo", json{{"before", true}}))),
            json({{"before", true}}));

  // The same secret under a new name, the attach following it, and a wider allowlist.
  sb.reload(ConfigBuilder()
                .computer("gamma", alpha_)
                .client("owner", owner_, R"({ "*" = ["*"] })", "gamma")
                .block(attach("gamma", R"(["echo", "secret_tool"])")));
  EXPECT_TRUE(sb.audit().wait_for("computer_renamed"));

  EXPECT_EQ(echoed(pod.request(tool_call(2, "echo", json{{"after", true}}))),
            json({{"after", true}}));
  EXPECT_EQ(pod.request(tool_call(3, "vm_status"))["result"]["structuredContent"]["computer"],
            "gamma");
  EXPECT_EQ(tool_names(pod.request(rpc(4, "tools/list"))),
            (std::vector<std::string>{"echo", "secret_tool", "vm_status"}));
  EXPECT_TRUE(sb.audit().wait_for(
      "call", fields_equal({{"principal", "kiro"}, {"computer", "gamma"}, {"outcome", "ok"}})));
  EXPECT_TRUE(stderr_says(sb, "pty attach now lends another computer"));

  // The pod socket was never closed nor redialled.
  EXPECT_FALSE(pod.session_ended());
  EXPECT_EQ(pod.dial_count(), 1u);
  EXPECT_EQ(sb.audit().count("pty_detach"), 0u);
}

TEST_F(PtyAttachE2e, ARemovedBlockKeepsServingUnderItsOldPolicy) {
  const auto lent = lend_alpha({.tools = R"(["echo"])"});
  ASSERT_FALSE(HasFailure());
  auto& pod = *lent.pod;
  auto& sb = *lent.sb;

  sb.reload(one_computer());
  EXPECT_TRUE(stderr_says(sb, "[[pty_attach]] removed"));
  EXPECT_EQ(echoed(pod.request(tool_call(1, "echo", json{{"still", "here"}}))),
            json({{"still", "here"}}));
  EXPECT_EQ(pod.request(tool_call(2, "secret_tool"))["result"]["isError"], true);
  EXPECT_FALSE(pod.session_ended());
}

// ---------------------------------------------------------------------------------------
// Fairness

TEST_F(PtyAttachE2e, ThePerCallerCapAppliesToAPod) {
  const auto lent = start_with_held_call();
  ASSERT_FALSE(HasFailure());
  auto& pod = *lent.pod;
  auto& sb = *lent.sb;
  const auto& computer = lent.computer;
  const json busy = pod.request(tool_call(2, "echo", json{{"n", 2}}));
  EXPECT_EQ(error_code(busy), kOverloaded) << busy.dump();
  EXPECT_NE(busy["error"]["message"].get<std::string>().find("toward the VM"), std::string::npos);
  EXPECT_EQ(computer->calls().size(), 1u) << "the call over the cap was sent";

  // The cap is this attach's, not the computer's: another caller still gets through.
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp/alpha", owner_.secret, "echo", json{{"x", 1}})),
            json({{"x", 1}}));

  computer->answer_echo(computer->calls().at(0));
  const auto held = pod.wait_reply(1, kDefaultWait);
  ASSERT_TRUE(held);
  EXPECT_EQ(echoed(*held), json({{"mode", "hold"}, {"n", 1}}));
  EXPECT_TRUE(sb.audit().wait_for("call", fields_equal({{"principal", "kiro"},
                                                        {"outcome", "overloaded"},
                                                        {"error_code", kOverloaded}})));
}

TEST_F(PtyAttachE2e, AtMost64RequestsFromOnePodAtOnce) {
  const auto lent = lend_alpha({.max_inflight = 64, .computer_max_inflight = 64});
  ASSERT_FALSE(HasFailure());
  auto& pod = *lent.pod;
  const auto& computer = lent.computer;

  for (int id = 1; id <= 64; ++id) pod.send(hold_call(id));
  ASSERT_TRUE(computer->wait_for_calls(64));
  const json busy = pod.request(tool_call(65, "echo"));
  EXPECT_EQ(error_code(busy), kOverloaded) << busy.dump();
  EXPECT_EQ(busy["error"]["message"], "too many requests in flight on this attach");
  EXPECT_EQ(computer->calls().size(), 64u);

  // One answer frees one permit.
  computer->answer_echo(computer->calls().at(0));
  ASSERT_TRUE(pod.wait_reply(1, kDefaultWait));
  EXPECT_EQ(echoed(pod.request(tool_call(66, "echo", json{{"n", 66}}))), json({{"n", 66}}));
}

// ---------------------------------------------------------------------------------------
// Full fidelity (docs/protocol.md, "Progress and event streams", "Cancellation"): a pod is a caller
// that can always take messages

TEST_F(PtyAttachE2e, APodsCallGetsProgressOnItsSocketWithThePodsOwnToken) {
  const auto lent = lend_alpha({});
  ASSERT_FALSE(HasFailure());
  auto& pod = *lent.pod;
  const auto& computer = lent.computer;

  pod.send(rpc(1, "tools/call",
               json{{"name", "echo"},
                    {"arguments", {{"mode", "hold"}}},
                    {"_meta", {{"progressToken", "pod-job"}}}}));
  ASSERT_TRUE(computer->wait_for_calls(1));
  const json seen = computer->calls().at(0);
  const json token = seen["params"]["_meta"]["progressToken"];
  EXPECT_TRUE(token.is_number_integer())
      << "the computer must see the switchboard's token: " << token;
  computer->send_text(json{{"jsonrpc", "2.0"},
                           {"method", "notifications/progress"},
                           {"params", {{"progressToken", token}, {"progress", 1}, {"total", 2}}}}
                          .dump());
  const auto is_progress = [](const json& message) {
    return message.is_object() && message.value("method", "") == "notifications/progress";
  };
  ASSERT_TRUE(eventually([&] {
    const auto messages = pod.messages();
    return std::any_of(messages.begin(), messages.end(), is_progress);
  })) << "no progress reached the pod";
  computer->answer_echo(seen);
  const auto reply = pod.wait_reply(1, kDefaultWait);
  ASSERT_TRUE(reply);
  EXPECT_EQ(echoed(*reply), json({{"mode", "hold"}}));

  // The progress came first, once, with the pod's own token.
  const auto messages = pod.messages();
  ASSERT_EQ(messages.size(), 2u);
  EXPECT_EQ(messages[0],
            (json{{"jsonrpc", "2.0"},
                  {"method", "notifications/progress"},
                  {"params", {{"progressToken", "pod-job"}, {"progress", 1}, {"total", 2}}}}));
  EXPECT_EQ(messages[1]["id"], 1);
}

TEST_F(PtyAttachE2e, APodsCancelReachesTheComputerWithItsIdAndFreesTheShare) {
  const auto lent = start_with_held_call();  // the attach's one-call share is in use
  ASSERT_FALSE(HasFailure());
  auto& pod = *lent.pod;
  auto& sb = *lent.sb;
  const auto& computer = lent.computer;
  const json computer_id = computer->calls().at(0)["id"];

  pod.send(json{{"jsonrpc", "2.0"},
                {"method", "notifications/cancelled"},
                {"params", {{"requestId", 1}, {"reason", "pod stop"}}}});
  const json cancel = computer->wait_for_frame([](const json& frame) {
    return frame.is_object() && frame.value("method", "") == "notifications/cancelled";
  });
  EXPECT_EQ(cancel, (json{{"jsonrpc", "2.0"},
                          {"method", "notifications/cancelled"},
                          {"params", {{"requestId", computer_id}, {"reason", "pod stop"}}}}));
  EXPECT_TRUE(sb.audit().wait_for(
      "call",
      fields_equal({{"principal", "kiro"}, {"computer", "alpha"}, {"outcome", "cancelled"}})));
  // The share came back at once: the next call goes through and is answered by the computer.
  EXPECT_EQ(echoed(pod.request(tool_call(2, "echo", json{{"n", 2}}))), json({{"n", 2}}));
  EXPECT_EQ(computer->calls().size(), 2u);
}

// ---------------------------------------------------------------------------------------
// Redial and stop

TEST_F(PtyAttachE2e, RedialsAfterAPlainDropAndGivesTheShareBack) {
  const auto lent = start_with_held_call();
  ASSERT_FALSE(HasFailure());
  auto& pod = *lent.pod;
  auto& sb = *lent.sb;

  const auto dropped_at = Clock::now();
  pod.drop();
  EXPECT_TRUE(
      sb.audit().wait_for("pty_detach", fields_equal({{"attach", "kiro"}, {"code", nullptr}})));
  ASSERT_TRUE(pod.wait_sessions(2, kDefaultWait)) << "no redial after a drop";
  const auto gap = pod.dials().at(1).at - dropped_at;
  EXPECT_GE(gap, std::chrono::milliseconds(700)) << "redialled without the backoff";
  EXPECT_TRUE(
      sb.audit().wait_for("call", fields_equal({{"principal", "kiro"}, {"outcome", "abandoned"}})));

  // The abandoned call's share came back: the one-call cap has room again.
  EXPECT_EQ(echoed(pod.request(tool_call(2, "echo", json{{"n", 2}}))), json({{"n", 2}}));
  EXPECT_EQ(sb.audit().count("pty_attach_stopped"), 0u);
}

TEST_F(PtyAttachE2e, RedialsOn4006AndStopsOnOther4xxx) {
  FakePod replaced({.secret = grant_});
  FakePod expired({.secret = grant_});
  SwitchboardProcess sb(
      one_computer()
          .block(AttachBlock{
              .name = "replaced", .url = replaced.url("one"), .secret_file = grant_file()}
                     .toml())
          .block(
              AttachBlock{.name = "expired", .url = expired.url("two"), .secret_file = grant_file()}
                  .toml()));
  ASSERT_TRUE(replaced.wait_sessions(1, kDefaultWait)) << sb.stderr_text();
  ASSERT_TRUE(expired.wait_sessions(1, kDefaultWait)) << sb.stderr_text();

  replaced.close(4006);  // the pod runtime was replaced: dial the new one
  expired.close(4001);   // the grant's TTL elapsed: stop
  EXPECT_TRUE(replaced.wait_sessions(2, kDefaultWait)) << "no redial after 4006";
  EXPECT_TRUE(
      sb.audit().wait_for("pty_detach", fields_equal({{"attach", "replaced"}, {"code", 4006}})));
  EXPECT_TRUE(sb.audit().wait_for("pty_attach_stopped",
                                  fields_equal({{"attach", "expired"}, {"code", 4001}})));
  EXPECT_FALSE(expired.wait_dials(2, kNoRedialWindow)) << "redialled after 4001";
  EXPECT_EQ(sb.audit().count("pty_attach_stopped", fields_equal({{"attach", "replaced"}})), 0u);
}

TEST_F(PtyAttachE2e, RedialsFastAfterA502AndSlowlyAfterA401) {
  FakePod proxied({.secret = grant_});
  FakePod unauthorized({.secret = grant_});
  proxied.refuse_next(502);
  unauthorized.refuse_next(401);
  SwitchboardProcess sb(
      one_computer()
          .block(
              AttachBlock{.name = "proxied", .url = proxied.url("one"), .secret_file = grant_file()}
                  .toml())
          .block(AttachBlock{
              .name = "unauthorized", .url = unauthorized.url("two"), .secret_file = grant_file()}
                     .toml()));
  ASSERT_TRUE(proxied.wait_dials(1, kDefaultWait)) << sb.stderr_text();
  ASSERT_TRUE(unauthorized.wait_dials(1, kDefaultWait)) << sb.stderr_text();
  const auto first_dials = Clock::now();

  // 502 is the proxy in front of a restarting pod: the normal backoff (~1 s).
  EXPECT_TRUE(proxied.wait_sessions(1, kNoRedialWindow)) << "no quick redial after a 502";
  EXPECT_EQ(proxied.dials().at(0).status, 502);
  // 401 needs a fresh grant: about a minute, so nothing within the window.
  EXPECT_TRUE(sb.audit().wait_for("pty_attach_refused",
                                  fields_equal({{"attach", "unauthorized"}, {"status", 401}})));
  const auto waited = Clock::now() - first_dials;
  if (waited < kNoRedialWindow) {
    EXPECT_FALSE(unauthorized.wait_dials(
        2, std::chrono::duration_cast<std::chrono::milliseconds>(kNoRedialWindow - waited)))
        << "redialled quickly after a 401";
  }
  EXPECT_EQ(unauthorized.dial_count(), 1u);
  EXPECT_EQ(sb.audit().count("pty_attach_refused", fields_equal({{"attach", "proxied"}})), 0u);
  EXPECT_TRUE(stderr_says(sb, "status=502"));
}

TEST_F(PtyAttachE2e, ReadsTheSecretFileOnEveryDial) {
  FakePod pod({.secret = grant_});
  const fs::path grant = scratch_.path() / "later.secret";  // not there yet
  SwitchboardProcess sb(one_computer().block(
      AttachBlock{.name = "kiro", .url = pod.url("laptop"), .secret_file = grant}.toml()));
  ASSERT_TRUE(stderr_says(sb, "cannot read secret_file")) << sb.stderr_text();
  EXPECT_EQ(pod.dial_count(), 0u);

  write_text(grant, "  " + grant_ + "\r\n\n");
  ASSERT_TRUE(pod.wait_sessions(1, std::chrono::seconds(8))) << sb.stderr_text();
  EXPECT_EQ(pod.dials().back().authorization, "Bearer " + grant_);
}

TEST_F(PtyAttachE2e, DropsThePodSocketOnShutdown) {
  FakePod pod({.secret = grant_});
  SwitchboardProcess sb(one_computer().block(
      AttachBlock{.name = "kiro", .url = pod.url("laptop"), .secret_file = grant_file()}.toml()));
  ASSERT_TRUE(pod.wait_sessions(1, kDefaultWait)) << sb.stderr_text();
  sb.send_signal(SIGTERM);
  EXPECT_TRUE(pod.wait_session_ended(kDefaultWait));
  EXPECT_EQ(sb.wait_exit(kDefaultWait), 0);
  EXPECT_EQ(pod.dial_count(), 1u);
}

// ---------------------------------------------------------------------------------------
// wss://

TEST_F(PtyAttachE2e, DialsWssAndVerifiesTheCertificate) {
  const TestPki pki = make_test_pki(scratch_.path(), "DNS:localhost");
  FakePod pod(
      {.secret = grant_,
       .tls = PodTls{.certificate_chain = pki.server_certificate, .private_key = pki.server_key}});
  const ScopedEnv trust("SSL_CERT_FILE", pki.ca_certificate.string());
  SwitchboardProcess sb(one_computer().block(AttachBlock{
      .name = "kiro", .url = pod.url("laptop", "localhost"), .secret_file = grant_file()}
                                                 .toml()));
  const auto computer = attach_ready(sb, alpha_, "alpha", owner_.secret);
  ASSERT_TRUE(computer);
  ASSERT_TRUE(pod.wait_sessions(1, kDefaultWait)) << sb.stderr_text();
  EXPECT_EQ(pod.dials().at(0).authorization, "Bearer " + grant_);
  EXPECT_EQ(echoed(pod.request(tool_call(1, "echo", json{{"over", "tls"}}))),
            json({{"over", "tls"}}));
}

TEST_F(PtyAttachE2e, RefusesAPodCertificateThatIsUntrustedOrForAnotherName) {
  // Trusted CA, but the certificate names localhost and the URL says 127.0.0.1.
  const fs::path trusted_dir = scratch_.path() / "trusted";
  const fs::path other_dir = scratch_.path() / "other";
  fs::create_directories(trusted_dir);
  fs::create_directories(other_dir);
  const TestPki trusted = make_test_pki(trusted_dir, "DNS:localhost");
  const TestPki untrusted = make_test_pki(other_dir, "DNS:localhost,IP:127.0.0.1");
  FakePod wrong_name({.secret = grant_,
                      .tls = PodTls{.certificate_chain = trusted.server_certificate,
                                    .private_key = trusted.server_key}});
  FakePod unknown_ca({.secret = grant_,
                      .tls = PodTls{.certificate_chain = untrusted.server_certificate,
                                    .private_key = untrusted.server_key}});
  const ScopedEnv trust("SSL_CERT_FILE", trusted.ca_certificate.string());
  SwitchboardProcess sb(one_computer()
                            .block(AttachBlock{.name = "wrong-name",
                                               .url = wrong_name.url("one", "127.0.0.1"),
                                               .secret_file = grant_file()}
                                       .toml())
                            .block(AttachBlock{.name = "unknown-ca",
                                               .url = unknown_ca.url("two", "localhost"),
                                               .secret_file = grant_file()}
                                       .toml()));
  EXPECT_TRUE(wrong_name.wait_tls_failures(1, kDefaultWait)) << sb.stderr_text();
  EXPECT_TRUE(unknown_ca.wait_tls_failures(1, kDefaultWait)) << sb.stderr_text();
  EXPECT_TRUE(stderr_says(sb, "attach=wrong-name error=TLS with 127.0.0.1"));
  EXPECT_TRUE(stderr_says(sb, "attach=unknown-ca error=TLS with localhost"));
  EXPECT_EQ(wrong_name.dial_count(), 0u);
  EXPECT_EQ(unknown_ca.dial_count(), 0u);
  EXPECT_EQ(sb.audit().count("pty_attach"), 0u);
}

}  // namespace
}  // namespace sbtest
