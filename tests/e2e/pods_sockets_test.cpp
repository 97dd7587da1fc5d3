// End to end: [[pty_attach]] (docs/protocol.md, "Pod sockets"). The real switchboard dials
// fake openab-pty pods (WebSocket servers on loopback) and lends them computers that fake
// daemons attached over GET /vm/attach. Covered: what the pod is answered, which computer it
// reaches, reload, the per-caller cap and the 64-request ceiling, progress and
// cancellation (docs/protocol.md), and a pod's request traced into its computer
// (docs/observability.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "harness/fixed_http_origin.hpp"
#include "tests/e2e/pods_helpers.hpp"

namespace sbtest {
namespace {

constexpr int kMethodNotFoundCode = -32601;

json initialize_request(int id) {
  return rpc(id, "initialize",
             json{{"protocolVersion", "2025-06-18"},
                  {"capabilities", json::object()},
                  {"clientInfo", {{"name", "openab-pty"}, {"version", "0.0.0"}}}});
}

// ---------------------------------------------------------------------------------------
// Tracing (docs/observability.md, "Spans")

// The spans of one export, flattened: each with its attributes by key.
std::vector<json> exported_spans(const std::string& request) {
  std::vector<json> spans;
  const auto head_end = request.find("\r\n\r\n");
  if (head_end == std::string::npos) return spans;
  const auto body = json::parse(request.substr(head_end + 4), nullptr, false);
  if (!body.is_object()) return spans;
  for (const auto& resource : body["resourceSpans"]) {
    for (const auto& scope : resource["scopeSpans"]) {
      for (json span : scope["spans"]) {
        json attributes = json::object();
        for (const auto& attribute : span["attributes"])
          attributes[attribute["key"].get<std::string>()] = attribute["value"].begin().value();
        span["attributes"] = attributes;
        spans.push_back(span);
      }
    }
  }
  return spans;
}

// A pod's request makes a span as an HTTP caller's does, over its socket: the pod's own
// trace context in `_meta` its parent, the attach its caller, and the computer handed the
// span of its round trip as its parent.
TEST_F(PtyAttachE2e, APodsRequestIsTracedIntoItsComputer) {
  const harness::FixedHttpOrigin collector("{}");
  const auto lent =
      lend_alpha({.more_config = "[telemetry]\nendpoint = " + json(collector.url("")).dump() +
                                 "\nbatch_delay_ms = 10\n"});
  ASSERT_FALSE(HasFailure());
  const std::string trace = "4bf92f3577b34da6a3ce929d0e0e4736";
  json call = tool_call(1, "echo", json{{"text", "hi"}});
  call["params"]["_meta"] = {{"traceparent", "00-" + trace + "-00f067aa0ba902b7-01"}};
  EXPECT_EQ(echoed(lent.pod->request(call)), json({{"text", "hi"}}));
  ASSERT_EQ(lent.computer->calls().size(), 1u);
  const std::string given = lent.computer->calls()[0]["params"]["_meta"]["traceparent"];
  ASSERT_EQ(given.size(), 55u) << given;
  EXPECT_EQ(given.substr(0, 36), "00-" + trace + "-");
  const std::string computers_parent = given.substr(36, 16);

  std::vector<json> spans;
  ASSERT_TRUE(eventually([&] {
    spans = exported_spans(collector.last_request());
    return spans.size() >= 3;
  })) << "the collector got "
      << collector.answered() << " export(s)";
  const auto named = [&](int kind) {
    const auto found = std::find_if(spans.begin(), spans.end(),
                                    [&](const json& span) { return span["kind"] == kind; });
    return found == spans.end() ? json() : *found;
  };
  const json server = named(2);
  const json hop = named(1);
  const json round_trip = named(3);
  EXPECT_EQ(server["name"], "tools/call echo");
  EXPECT_EQ(server["traceId"], trace);
  EXPECT_EQ(server["parentSpanId"], "00f067aa0ba902b7");
  EXPECT_EQ(server["attributes"]["switchboard.caller"], "kiro");
  EXPECT_EQ(server["attributes"]["switchboard.computer"], "alpha");
  EXPECT_EQ(server["attributes"]["network.protocol.name"], "websocket");
  EXPECT_FALSE(server["attributes"].contains("http.response.status_code")) << "no HTTP here";
  EXPECT_EQ(hop["parentSpanId"], server["spanId"]);
  EXPECT_EQ(round_trip["parentSpanId"], hop["spanId"]);
  EXPECT_EQ(round_trip["spanId"], computers_parent);
}

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

  EXPECT_EQ(pod.request(rpc(7, "roots/list"))["error"]["code"], kMethodNotFoundCode);
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

// A pod's message is read by the rules of an HTTP caller's body (docs/protocol.md, "Pod
// sockets"): one with a NUL byte, which nlohmann would read as what came before it, is
// ignored as an HTTP caller's would be refused; the next is served.
TEST_F(PtyAttachE2e, APodsMessageWithANulByteIsIgnoredLikeAnHttpCallersWouldBeRefused) {
  const auto lent = lend_alpha({});
  ASSERT_FALSE(HasFailure());
  auto& pod = *lent.pod;
  pod.send_text(tool_call(7, "echo", json{{"n", 7}}).dump() + std::string(1, '\0') + "junk");
  EXPECT_EQ(echoed(pod.request(tool_call(8, "echo", json{{"n", 8}}))), json({{"n", 8}}));
  EXPECT_EQ(lent.computer->calls().size(), 1u) << "the message with a NUL byte was read";
  for (const json& message : pod.messages())
    EXPECT_FALSE(message.is_object() && message.value("id", json()) == 7) << message.dump();
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

}  // namespace
}  // namespace sbtest
