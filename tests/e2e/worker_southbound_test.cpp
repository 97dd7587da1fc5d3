// End to end: the southbound session in detail (docs/protocol.md, "Calls", "Handshake",
// "Ids", "Frames from the computer", "Audit log"): the handshake window, what the computer
// may send, oversized messages, how replies and errors are relayed and audited, and
// tools/call parameter validation.
#include <gtest/gtest.h>

#include "tests/e2e/e2e_helpers.hpp"

namespace sbtest {
namespace {

class Southbound : public AlphaTest {};

TEST_F(Southbound, DuringTheHandshakeTheComputerIsAttachedButNotReady) {
  SwitchboardProcess sb(config());
  FakeComputer fake(sb.port(),
                    FakeComputerOptions{.secret = alpha_.secret, .init = InitMode::kNever});
  ASSERT_EQ(fake.attach(), 101);
  ASSERT_TRUE(fake.wait_for_requests("initialize", 1));
  const json initialize = fake.requests("initialize")[0];
  EXPECT_EQ(initialize["id"], 1) << "the handshake is the socket's first request";
  EXPECT_EQ(initialize["params"]["clientInfo"]["name"], "openab-sb");
  EXPECT_EQ(initialize["params"]["protocolVersion"], "2025-06-18");

  ASSERT_TRUE(eventually([&] {
    return computers_entry(sb, owner_.secret, "alpha") ==
           json{{"attached", true}, {"default", true}, {"name", "alpha"}, {"ready", false}};
  })) << computers_entry(sb, owner_.secret, "alpha");
  EXPECT_EQ(http_get(sb.port(), "/readyz").status, 503);
  EXPECT_EQ(sb.worker("alpha")["state"], "handshaking");
  // Calls in that window are "not connected", and nothing but the handshake is sent.
  const json call = call_tool(sb.port(), "/mcp", alice_.secret, "echo", json{{"n", 1}});
  EXPECT_EQ(call["result"]["isError"], true);
  EXPECT_NE(result_text(call).find("the VM is not connected"), std::string::npos);
  EXPECT_EQ(tool_names(list_tools(sb.port(), "/mcp", alice_.secret)),
            std::vector<std::string>{"vm_status"});
  EXPECT_EQ(fake.frames().size(), 1u) << "sent before ready: " << fake.frames().back();
}

// The window is 15 s (shared/timings.hpp); shortened here to 1.5 s.
TEST_F(Southbound, AnInitializeThatIsNeverAnsweredIsClosedWith4005AtTheEndOfTheWindow) {
  TestTimings timings("handshake=1500");
  SwitchboardProcess sb(config());
  FakeComputer fake(sb.port(),
                    FakeComputerOptions{.secret = alpha_.secret, .init = InitMode::kNever});
  const auto dialled_at = Clock::now();
  ASSERT_EQ(fake.attach(), 101);
  const auto closed = fake.wait_closed(10s);
  ASSERT_TRUE(closed);
  EXPECT_TRUE(closed->close_frame);
  EXPECT_EQ(closed->code, 4005);
  EXPECT_GE(elapsed_since(dialled_at), 1400ms) << "closed before the window ended";
  const auto detach = sb.audit().wait_for("vm_detach");
  ASSERT_TRUE(detach);
  EXPECT_EQ((*detach)["code"], 4005);
  EXPECT_TRUE(computers_entry(sb, owner_.secret, "alpha")["attached"] == false);
}

// Liveness (docs/protocol.md, "Liveness"): a ping every 20 s, and a computer silent for
// three of them is closed with 1011. Shortened here to 300 ms.
TEST_F(Southbound, AComputerThatAnswersPingsStaysAttachedPastManyIntervals) {
  TestTimings timings("ping_interval=300");
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  ASSERT_TRUE(fake->wait_for_pings(6)) << "no steady pings";
  EXPECT_FALSE(fake->closed());
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp/alpha", owner_.secret, "echo", json{{"n", 1}})),
            (json{{"n", 1}}));
  EXPECT_EQ(sb.audit().count("vm_detach"), 0u);
}

TEST_F(Southbound, AComputerSilentForThreePingIntervalsIsClosedWith1011) {
  TestTimings timings("ping_interval=300");
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb, FakeComputerOptions{.deaf_after_initialized = true});
  ASSERT_TRUE(fake);
  const auto detach = sb.audit().wait_for("vm_detach");
  ASSERT_TRUE(detach);
  EXPECT_EQ((*detach)["code"], 1011);
  EXPECT_EQ((*detach)["computer"], "alpha");
  EXPECT_TRUE(
      eventually([&] { return computers_entry(sb, owner_.secret, "alpha")["attached"] == false; }));
  const json call = call_tool(sb.port(), "/mcp/alpha", owner_.secret, "echo", json{{"n", 2}});
  EXPECT_NE(result_text(call).find("the VM is not connected"), std::string::npos) << call.dump();
}

TEST_F(Southbound, RequestsFromTheComputerAreAnsweredAndJunkIsIgnored) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  fake->send_text("this is not json");
  fake->send_text("[1,2,3]");
  fake->send_text(R"({"jsonrpc":"2.0","id":999,"result":{"stray":true}})");
  fake->send_text(R"({"jsonrpc":"2.0","method":"notifications/tools/list_changed"})");
  fake->send_text(R"({"jsonrpc":"2.0","id":"p1","method":"ping"})");
  fake->send_text(R"({"jsonrpc":"2.0","id":7,"method":"sampling/createMessage","params":{}})");
  const json pong =
      fake->wait_for_frame([](const json& frame) { return frame.value("id", json()) == "p1"; });
  EXPECT_EQ(pong, (json{{"id", "p1"}, {"jsonrpc", "2.0"}, {"result", json::object()}}));
  const json refused =
      fake->wait_for_frame([](const json& frame) { return frame.value("id", json()) == 7; });
  EXPECT_EQ(error_code(refused), kMethodNotFound) << refused;
  // After its initialize answer the computer was told it is initialized (no id).
  const auto frames = fake->frames();
  ASSERT_GE(frames.size(), 2u);
  EXPECT_EQ(frames[0]["method"], "initialize");
  EXPECT_EQ(frames[1], (json{{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}));
  // The session is unharmed.
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp", alice_.secret, "echo", json{{"n", 1}})),
            (json{{"n", 1}}));
  EXPECT_FALSE(fake->closed());
}

TEST_F(Southbound, AMessageOver16MiBIsClosedWith1009) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  CallInFlight pending(sb.port(), "/mcp", alice_.secret, "echo", hold(1));
  ASSERT_TRUE(fake->wait_for_calls(1));
  const std::string filler(16 * 1024 * 1024, 'x');
  fake->send_text(R"({"jsonrpc":"2.0","method":"notifications/message","params":{"data":")" +
                  filler + "\"}}");
  const auto closed = fake->wait_closed();
  ASSERT_TRUE(closed);
  EXPECT_TRUE(closed->close_frame);
  EXPECT_EQ(closed->code, 1009);
  EXPECT_EQ(error_code(pending.wait()), kDisconnected);
  const auto detach = sb.audit().wait_for("vm_detach");
  ASSERT_TRUE(detach);
  EXPECT_EQ((*detach)["code"], 1009) << "recorded as sent";
}

TEST_F(Southbound, RepliesAreRelayedVerbatimWithTheCallersIdAndAudited) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  // A computer-side JSON-RPC error passes through with its code.
  const json rpc_error = call_tool(sb.port(), "/mcp", alice_.secret, "echo",
                                   json{{"mode", "error"}, {"code", -32042}}, 25);
  EXPECT_EQ(rpc_error["id"], 25);
  EXPECT_EQ(rpc_error["error"], (json{{"code", -32042}, {"message", "fake error"}}));
  // Ids are strings, integers or null (docs/protocol.md): anything else is refused, and
  // not forwarded.
  const json object_id =
      call_tool(sb.port(), "/mcp", alice_.secret, "echo", json{{"k", "o"}}, json{{"object", "id"}});
  EXPECT_TRUE(object_id["id"].is_null());
  EXPECT_EQ(error_code(object_id), kInvalidRequest);
  EXPECT_TRUE(call_with_arguments(*fake, json{{"k", "o"}}).is_null());
  const json tool_error =
      call_tool(sb.port(), "/mcp", alice_.secret, "echo", json{{"mode", "tool_error"}}, nullptr);
  EXPECT_TRUE(tool_error.contains("id"));
  EXPECT_TRUE(tool_error["id"].is_null());
  EXPECT_EQ(tool_error["result"]["isError"], true);
  const json ok = call_tool(sb.port(), "/mcp", alice_.secret, "echo", json{{"k", "v"}}, "s");
  EXPECT_EQ(ok["id"], "s");
  EXPECT_EQ(echoed(ok), (json{{"k", "v"}}));

  ASSERT_TRUE(sb.audit().wait_for_count("call", 3));
  const auto calls = sb.audit().events("call");
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0]["outcome"], "rpc_error");
  EXPECT_EQ(calls[0]["error_code"], -32042);
  EXPECT_EQ(calls[1]["outcome"], "tool_error");
  EXPECT_TRUE(calls[1]["error_code"].is_null());
  EXPECT_EQ(calls[2]["outcome"], "ok");
  EXPECT_EQ(calls[2]["args"], R"({"k":"v"})");
  for (const auto& line : calls) {
    EXPECT_GT(line["response_bytes"].get<long>(), 0) << line;
    EXPECT_TRUE(line["ms"].is_number_integer());
    EXPECT_EQ(line["principal"], "alice");
    EXPECT_EQ(line["computer"], "alpha");
    EXPECT_EQ(line["tool"], "echo");
  }
}

TEST_F(Southbound, AuditedArgumentsAreCutAt512Characters) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  const json arguments{{"text", std::string(600, 'a')}};
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp", alice_.secret, "echo", arguments)), arguments);
  call_tool(sb.port(), "/mcp", alice_.secret, "echo");  // no arguments at all
  ASSERT_TRUE(sb.audit().wait_for_count("call", 2));
  const auto calls = sb.audit().events("call");
  EXPECT_EQ(calls[0]["args"], arguments.dump().substr(0, 512) + "\u2026");
  EXPECT_EQ(calls[1]["args"], "");
}

// Audit lines are collected during a loop turn and written at its end (docs/protocol.md,
// "Audit log"), and a clean stop writes whatever is left: the file, read without waiting
// once the supervisor has exited, has every answered call, whole and in order.
TEST_F(Southbound, EveryAnsweredCallIsAuditedInOrderThroughACleanStop) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  constexpr int kCalls = 20;
  for (int n = 0; n < kCalls; ++n) {
    ASSERT_EQ(echoed(call_tool(sb.port(), "/mcp", alice_.secret, "echo", json{{"n", n}})),
              (json{{"n", n}}));
  }
  sb.send_signal(SIGTERM);
  ASSERT_EQ(sb.wait_exit(10s), 0);
  const auto calls = sb.audit().events("call");
  ASSERT_EQ(calls.size(), static_cast<std::size_t>(kCalls)) << sb.audit().text();
  for (int n = 0; n < kCalls; ++n) EXPECT_EQ(calls[n]["args"], (json{{"n", n}}.dump()));
}

TEST_F(Southbound, LengthsAreCountedInCharactersNotBytes) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  std::string name;
  for (int i = 0; i < 128; ++i) name += "\u00e9";  // 128 characters, 256 bytes
  EXPECT_EQ(call_tool(sb.port(), "/mcp", alice_.secret, name)["result"]["isError"], true);
  EXPECT_EQ(error_code(call_tool(sb.port(), "/mcp", alice_.secret, name + "\u00e9")), -32602);

  std::string text;
  for (int i = 0; i < 600; ++i) text += "\u00e9";
  const json arguments{{"t", text}};
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp", alice_.secret, "echo", arguments)), arguments);
  ASSERT_TRUE(sb.audit().wait_for_count("call", 2));
  // {"t":" is 6 characters, then 506 of the 2-byte ones, then the ellipsis.
  std::string expected = R"({"t":")";
  for (int i = 0; i < 506; ++i) expected += "\u00e9";
  EXPECT_EQ(sb.audit().events("call")[1]["args"], expected + "\u2026");
}

TEST_F(Southbound, BadToolsCallParamsAre32602AndNotAudited) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  const std::vector<json> bad{
      rpc(1, "tools/call", json::object()),
      rpc(2, "tools/call", json{{"name", 5}}),
      rpc(3, "tools/call", json{{"name", ""}}),
      rpc(4, "tools/call", json{{"name", std::string(129, 'n')}}),
      rpc(5, "tools/call", json{{"name", "echo"}, {"arguments", nullptr}}),
      rpc(6, "tools/call", json{{"name", "echo"}, {"arguments", json::array()}}),
      rpc(7, "tools/call"),
  };
  for (const auto& message : bad) {
    SCOPED_TRACE(message.dump());
    const auto response = post_mcp(sb.port(), "/mcp", alice_.secret, message);
    EXPECT_EQ(response.status, 200);
    EXPECT_EQ(error_code(response.json()), -32602);
    EXPECT_EQ(response.json()["id"], message["id"]);
  }
  // 128 characters is fine (a denied tool, so nothing is forwarded either way).
  EXPECT_EQ(call_tool(sb.port(), "/mcp", alice_.secret, std::string(128, 'n'))["result"]["isError"],
            true);
  ASSERT_TRUE(sb.audit().wait_for("call"));
  EXPECT_EQ(sb.audit().count("call"), 1u);
  EXPECT_TRUE(fake->calls().empty());
}

TEST_F(Southbound, ToolsListCountsAgainstTheCapsAndAComputerErrorGivesVmStatusOnly) {
  SwitchboardProcess sb(config(/*alpha_max=*/1));
  auto fake = attach_alpha(sb, FakeComputerOptions{.tools = json{{"not", "an array"}}});
  ASSERT_TRUE(fake);
  // A tools result that is not an array: only vm_status.
  EXPECT_EQ(tool_names(list_tools(sb.port(), "/mcp", alice_.secret)),
            std::vector<std::string>{"vm_status"});
  CallInFlight pending(sb.port(), "/mcp", alice_.secret, "echo", hold(1));
  ASSERT_TRUE(fake->wait_for_calls(1));
  const json full = list_tools(sb.port(), "/mcp", owner_.secret, 4);
  EXPECT_EQ(error_code(full), kOverloaded) << full;
  EXPECT_EQ(full["id"], 4);
  fake->answer_echo(fake->calls()[0]);
  EXPECT_EQ(echoed(pending.wait()), hold(1));
}

// Callers may list as often as they like: a computer that answers each with an error is
// told of in the log at most once a minute, with a count (docs/robustness.md, "Log floods").
TEST_F(Southbound, AComputersErrorToToolsListIsLoggedAtMostOnceAMinute) {
  SwitchboardProcess sb(config());
  FakeComputerOptions options;
  options.tools_list_reply = json{{"error", {{"code", -32603}, {"message", "broken"}}}};
  auto fake = attach_alpha(sb, options);
  ASSERT_TRUE(fake);
  for (int id = 1; id <= 20; ++id) {
    EXPECT_EQ(tool_names(list_tools(sb.port(), "/mcp", alice_.secret, id)),
              std::vector<std::string>{"vm_status"});
  }
  ASSERT_TRUE(fake->wait_for_requests("tools/list", 20));
  const std::string log = sb.stderr_text();
  EXPECT_EQ(occurrences(log, "computer answered tools/list with an error"), 1u) << log;
  EXPECT_NE(log.find("count=1"), std::string::npos) << log;
}

TEST_F(Southbound, ToolsListPastControlSecsGets32003) {
  SwitchboardProcess sb(config().timeouts(20, /*control_secs=*/1, {}));
  auto fake = attach_alpha(sb, FakeComputerOptions{.hold_tools_list = true});
  ASSERT_TRUE(fake);
  const auto started = Clock::now();
  const json reply = list_tools(sb.port(), "/mcp", alice_.secret, "l");
  EXPECT_EQ(error_code(reply), kTimeout) << reply;
  EXPECT_EQ(reply["id"], "l");
  EXPECT_GE(elapsed_since(started), 900ms);
  EXPECT_LT(elapsed_since(started), 2900ms);
  EXPECT_EQ(sb.audit().count("call"), 0u) << "tools/list is never audited";
}

TEST_F(Southbound, AttachWithoutAWebSocketUpgradeIsRefusedWithoutAudit) {
  SwitchboardProcess sb(config());
  const auto response = http_get(sb.port(), "/vm/attach", alpha_.secret);
  EXPECT_EQ(response.status, 400);
  EXPECT_EQ(http(sb.port(), HttpRequest{.method = "POST", .target = "/vm/attach"}).status, 405);
  EXPECT_EQ(sb.audit().count("vm_auth_fail"), 0u);
  EXPECT_EQ(sb.audit().count("vm_attach"), 0u);
}

}  // namespace
}  // namespace sbtest
