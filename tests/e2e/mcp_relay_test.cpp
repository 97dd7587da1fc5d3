// End to end: relaying calls to an attached computer (docs/protocol.md, "Tool list" to
// "In-flight caps", "Attach" to "Session end"): tool policy, id rewriting under
// concurrency, timeouts and in-flight caps, takeover, a computer vanishing, secret rotation
// by reload, the refused handshake, and the v1 config.
#include <gtest/gtest.h>

#include <csignal>

#include "tests/e2e/e2e_helpers.hpp"

namespace sbtest {
namespace {

class Relay : public ::testing::Test {
 protected:
  Secret alpha_ = new_secret();
  Secret owner_ = new_secret();
  Secret alice_ = new_secret();
  Secret bob_ = new_secret();

  // alpha, reached by owner ("*"), alice (echo and slow) and bob (echo).
  ConfigBuilder config(std::optional<int> alpha_max = {}, std::optional<int> alice_max = {}) const {
    return ConfigBuilder()
        .computer("alpha", alpha_, alpha_max)
        .client("owner", owner_, R"({ "*" = ["*"] })", "alpha")
        .client("alice", alice_, R"({ alpha = ["echo", "slow"] })", std::nullopt, alice_max)
        .client("bob", bob_, R"({ alpha = ["echo"] })");
  }
};

const json kHold = json{{"mode", "hold"}};

// ---------------------------------------------------------------------------------------
// Policy

TEST_F(Relay, TheAllowlistFiltersToolsList) {
  SwitchboardProcess sb(config());
  auto fake = attach_ready(sb, alpha_, "alpha", owner_.secret);
  ASSERT_TRUE(fake);
  EXPECT_EQ(tool_names(list_tools(sb.port(), "/mcp", alice_.secret)),
            (std::vector<std::string>{"echo", "slow", "vm_status"}));
  EXPECT_EQ(tool_names(list_tools(sb.port(), "/mcp", bob_.secret)),
            (std::vector<std::string>{"echo", "vm_status"}));
  EXPECT_EQ(tool_names(list_tools(sb.port(), "/mcp", owner_.secret)),
            (std::vector<std::string>{"echo", "slow", "secret_tool", "vm_status"}));
  // Each listing was forwarded; each carries the caller's id.
  EXPECT_EQ(fake->requests("tools/list").size(), 3u);
  EXPECT_EQ(list_tools(sb.port(), "/mcp", bob_.secret, "list-1")["id"], "list-1");
  // params travel verbatim (a cursor passes through); absent params become {}.
  EXPECT_EQ(fake->requests("tools/list")[0]["params"], json::object());
  post_mcp(sb.port(), "/mcp", bob_.secret, rpc(2, "tools/list", json{{"cursor", "page-2"}}));
  EXPECT_EQ(fake->requests("tools/list").back()["params"], (json{{"cursor", "page-2"}}));
}

TEST_F(Relay, CallParamsAreForwardedVerbatimOnAKeptAliveConnection) {
  SwitchboardProcess sb(config());
  auto fake = attach_ready(sb, alpha_, "alpha", owner_.secret);
  ASSERT_TRUE(fake);
  HttpConnection connection(sb.port());
  for (int i = 1; i <= 3; ++i) {
    const json params{{"name", "echo"},
                      {"arguments", {{"i", i}, {"nested", {{"list", {1, "two", nullptr}}}}}},
                      {"_meta", {{"progressToken", i}}}};
    const auto response = connection.request(
        mcp_request("/mcp", alice_.secret, rpc(i, "tools/call", params)), /*keep_alive=*/true);
    ASSERT_EQ(response.status, 200);
    EXPECT_EQ(response.json()["id"], i);
    EXPECT_EQ(echoed(response.json()), params["arguments"]);
    ASSERT_TRUE(fake->wait_for_calls(i));
    // Verbatim but for the progress token, which the switchboard replaces with one of its
    // own on that socket (docs/protocol.md, "Progress and event streams").
    json forwarded = fake->calls().back()["params"];
    EXPECT_TRUE(forwarded["_meta"]["progressToken"].is_number_integer()) << forwarded;
    forwarded["_meta"]["progressToken"] = i;
    EXPECT_EQ(forwarded, params) << "params must travel verbatim";
  }
}

TEST_F(Relay, InitializeWhileReadyNamesTheConnectedComputer) {
  SwitchboardProcess sb(config());
  auto fake = attach_ready(sb, alpha_, "alpha", owner_.secret);
  ASSERT_TRUE(fake);
  const json reply = post_mcp(sb.port(), "/mcp", alice_.secret, rpc(1, "initialize")).json();
  const std::string instructions = reply["result"].value("instructions", "");
  EXPECT_NE(instructions.find("connected through OpenAB Switchboard as `alpha`"), std::string::npos)
      << instructions;
  EXPECT_TRUE(fake->requests("initialize").size() == 1u) << "initialize is never forwarded";
}

TEST_F(Relay, ADeniedToolIsAToolResultAndNeverReachesTheComputer) {
  SwitchboardProcess sb(config());
  auto fake = attach_ready(sb, alpha_, "alpha", owner_.secret);
  ASSERT_TRUE(fake);
  const json denied = call_tool(sb.port(), "/mcp", bob_.secret, "secret_tool", json{{"a", 1}});
  EXPECT_FALSE(denied.contains("error")) << denied;
  EXPECT_EQ(denied["result"]["isError"], true);
  const std::string text = result_text(denied);
  EXPECT_NE(text.find("`secret_tool`"), std::string::npos) << text;
  EXPECT_NE(text.find("`bob`"), std::string::npos) << text;
  EXPECT_NE(text.find("`alpha`"), std::string::npos) << text;
  const auto line = sb.audit().wait_for("call", fields_equal({{"tool", "secret_tool"}}));
  ASSERT_TRUE(line);
  EXPECT_EQ((*line)["outcome"], "denied");
  EXPECT_TRUE((*line)["error_code"].is_null());

  // An allowed call afterwards is the barrier: the computer saw only that one.
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp", bob_.secret, "echo", json{{"b", 2}})),
            (json{{"b", 2}}));
  const auto calls = fake->calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0]["params"]["name"], "echo");
}

// The policy judges the tool the computer will run. A request that names its tool twice
// (once spelled with an escape) reaches both as one name, the last, as a parser that keeps
// the last member reads it: the other name never reaches the computer.
TEST_F(Relay, ATwiceNamedToolReachesThePolicyAndTheComputerAsOne) {
  SwitchboardProcess sb(config());
  auto fake = attach_ready(sb, alpha_, "alpha", owner_.secret);
  ASSERT_TRUE(fake);
  auto post_text = [&](std::string body) {
    HttpRequest request = mcp_request("/mcp", bob_.secret, json());
    request.body = std::move(body);
    return http(sb.port(), request);
  };
  const auto denied =
      post_text(R"({"jsonrpc":"2.0","id":1,"method":"tools/call",)"
                R"("params":{"name":"echo","arguments":{"a":1},"name":"secret_tool"}})");
  ASSERT_EQ(denied.status, 200) << denied.body;
  EXPECT_EQ(denied.json()["result"]["isError"], true) << denied.body;
  EXPECT_NE(result_text(denied.json()).find("`secret_tool`"), std::string::npos) << denied.body;

  const auto allowed =
      post_text(R"({"jsonrpc":"2.0","id":2,"method":"tools/call",)"
                R"("params":{"name":"secret_tool","arguments":{"b":2},"name":"echo"}})");
  ASSERT_EQ(allowed.status, 200) << allowed.body;
  EXPECT_EQ(echoed(allowed.json()), (json{{"b", 2}})) << allowed.body;
  ASSERT_EQ(fake->calls().size(), 1u);
  for (const auto& text : fake->frame_texts()) {
    EXPECT_EQ(text.find("secret_tool"), std::string::npos) << "the computer saw " << text;
  }
}

TEST_F(Relay, VmStatusIsAlwaysAllowedAndAnsweredLocally) {
  SwitchboardProcess sb(config());
  auto fake = attach_ready(sb, alpha_, "alpha", owner_.secret);
  ASSERT_TRUE(fake);
  const json reply = call_tool(sb.port(), "/mcp", bob_.secret, "vm_status");
  const json& status = reply["result"]["structuredContent"];
  EXPECT_EQ(status["computer"], "alpha");
  EXPECT_EQ(status["attached"], true);
  EXPECT_EQ(status["ready"], true);
  EXPECT_EQ(status["server"], (json{{"name", "fake-computer"}, {"version", "9.9.9"}}));
  EXPECT_EQ(status["max_in_flight"], 8);
  EXPECT_TRUE(fake->calls().empty());
}

// ---------------------------------------------------------------------------------------
// Ids and concurrency

TEST_F(Relay, EightConcurrentCallersWithTheSameIdGetTheirOwnAnswers) {
  // Eight callers, one id: every call is held at the computer until all eight are there,
  // then answered in reverse order.
  Secret computer = new_secret();
  ConfigBuilder builder;
  builder.computer("alpha", computer, 8);
  std::vector<Secret> callers;
  for (int i = 0; i < 8; ++i) {
    callers.push_back(new_secret());
    builder.client("caller" + std::to_string(i), callers.back(), R"({ alpha = ["echo"] })");
  }
  SwitchboardProcess sb(builder);
  auto fake =
      attach_ready(sb, computer, "alpha", callers[0].secret,
                   FakeComputerOptions{.on_call = [](const json&) { return CallAction::hold(); }});
  ASSERT_TRUE(fake);
  std::vector<std::unique_ptr<CallInFlight>> inflight;
  for (int i = 0; i < 8; ++i) {
    inflight.push_back(std::make_unique<CallInFlight>(sb.port(), "/mcp", callers[i].secret, "echo",
                                                      json{{"caller", i}}, 1));
  }
  ASSERT_TRUE(fake->wait_for_calls(8));
  auto calls = fake->calls();
  std::set<std::uint64_t> ids;
  for (const auto& call : calls) ids.insert(call["id"].get<std::uint64_t>());
  EXPECT_EQ(ids.size(), 8u) << "the switchboard reused an id toward the computer";
  for (auto call = calls.rbegin(); call != calls.rend(); ++call) fake->answer_echo(*call);
  for (int i = 0; i < 8; ++i) {
    const json reply = inflight[i]->wait();
    EXPECT_EQ(reply["id"], 1);
    EXPECT_EQ(echoed(reply), (json{{"caller", i}})) << "caller " << i << " got " << reply;
  }
}

// ---------------------------------------------------------------------------------------
// Timeouts and caps

TEST_F(Relay, ACallPastItsToolTimeoutGets32003AndTheLateReplyIsDropped) {
  SwitchboardProcess sb(config());  // [timeouts.tools] slow = 1
  auto fake = attach_ready(sb, alpha_, "alpha", owner_.secret);
  ASSERT_TRUE(fake);
  const auto started = Clock::now();
  const json reply = call_tool(sb.port(), "/mcp", alice_.secret, "slow", kHold, "t");
  const auto took = elapsed_since(started);
  EXPECT_EQ(error_code(reply), kTimeout) << reply;
  EXPECT_EQ(reply["id"], "t");
  EXPECT_GE(took, 900ms);
  EXPECT_LT(took, 2900ms) << "the worker's own 1 s timeout should fire, not the backstop";
  const auto line = sb.audit().wait_for("call", fields_equal({{"tool", "slow"}}));
  ASSERT_TRUE(line);
  EXPECT_EQ((*line)["outcome"], "timeout");
  EXPECT_EQ((*line)["error_code"], kTimeout);

  // The late answer goes nowhere; the next call gets a fresh id and its own answer.
  ASSERT_EQ(fake->calls().size(), 1u);
  const json late_call = fake->calls()[0];
  fake->answer(late_call["id"].get<std::uint64_t>(),
               json{{"result", {{"content", json::array()}, {"late", true}}}});
  const json next = call_tool(sb.port(), "/mcp", alice_.secret, "echo", json{{"n", 2}}, "t");
  EXPECT_EQ(echoed(next), (json{{"n", 2}}));
  ASSERT_EQ(fake->calls().size(), 2u);
  EXPECT_NE(fake->calls()[1]["id"], late_call["id"]);
}

TEST_F(Relay, TheComputerWideCapGives32002WithoutSending) {
  SwitchboardProcess sb(config(/*alpha_max=*/2, /*alice_max=*/2));
  auto fake = attach_ready(sb, alpha_, "alpha", owner_.secret);
  ASSERT_TRUE(fake);
  CallInFlight first(sb.port(), "/mcp", alice_.secret, "echo", hold(1), 1);
  CallInFlight second(sb.port(), "/mcp", alice_.secret, "echo", hold(2), 2);
  ASSERT_TRUE(fake->wait_for_calls(2));
  const json third = call_tool(sb.port(), "/mcp", bob_.secret, "echo", json{{"n", 3}}, 3);
  EXPECT_EQ(error_code(third), kOverloaded) << third;
  EXPECT_EQ(third["id"], 3);
  const auto line = sb.audit().wait_for("call", fields_equal({{"outcome", "overloaded"}}));
  ASSERT_TRUE(line);
  EXPECT_EQ((*line)["error_code"], kOverloaded);
  EXPECT_EQ((*line)["principal"], "bob");
  // Once a slot is free again, calls go through; the refused one was never sent.
  fake->answer_echo(call_with_arguments(*fake, hold(1)));
  EXPECT_EQ(echoed(first.wait()), hold(1));
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp", bob_.secret, "echo", json{{"n", 4}})),
            (json{{"n", 4}}));
  for (const auto& call : fake->calls()) EXPECT_NE(call["params"]["arguments"], (json{{"n", 3}}));
  fake->answer_echo(call_with_arguments(*fake, hold(2)));
  EXPECT_EQ(echoed(second.wait()), hold(2));
}

TEST_F(Relay, TheDefaultPerCallerCapIsHalfTheComputersRoundedUpAndLeavesRoomForOthers) {
  // max_inflight 3: each caller may hold ceil(3/2) = 2.
  SwitchboardProcess sb(config(/*alpha_max=*/3));
  auto fake = attach_ready(sb, alpha_, "alpha", owner_.secret);
  ASSERT_TRUE(fake);
  CallInFlight first(sb.port(), "/mcp", alice_.secret, "echo", kHold, 1);
  CallInFlight second(sb.port(), "/mcp", alice_.secret, "echo", kHold, 2);
  ASSERT_TRUE(fake->wait_for_calls(2));
  const json over = call_tool(sb.port(), "/mcp", alice_.secret, "echo", json{{"n", 3}}, 3);
  EXPECT_EQ(error_code(over), kOverloaded) << "alice's third call: " << over;
  // bob still has room on the same computer.
  const json bobs = call_tool(sb.port(), "/mcp", bob_.secret, "echo", json{{"bob", 1}}, 4);
  EXPECT_EQ(echoed(bobs), (json{{"bob", 1}}));
  for (const auto& call : fake->calls()) {
    if (call["params"]["arguments"] == kHold) fake->answer_echo(call);
  }
  EXPECT_FALSE(first.wait().contains("error"));
  EXPECT_FALSE(second.wait().contains("error"));
}

// ---------------------------------------------------------------------------------------
// The computer's socket

TEST_F(Relay, ASecondAttachWithTheSameSecretTakesOver) {
  SwitchboardProcess sb(config());
  auto old_fake = attach_ready(sb, alpha_, "alpha", owner_.secret);
  ASSERT_TRUE(old_fake);
  CallInFlight pending(sb.port(), "/mcp", alice_.secret, "echo", kHold, "p");
  ASSERT_TRUE(old_fake->wait_for_calls(1));

  FakeComputer new_fake(sb.port(), FakeComputerOptions{.secret = alpha_.secret});
  ASSERT_EQ(new_fake.attach(), 101);
  const auto closed = old_fake->wait_closed();
  ASSERT_TRUE(closed);
  EXPECT_TRUE(closed->close_frame);
  EXPECT_EQ(closed->code, 4002);
  EXPECT_EQ(closed->reason, "replaced by a newer attach");
  const json lost = pending.wait();
  EXPECT_EQ(error_code(lost), kDisconnected) << lost;
  EXPECT_EQ(lost["id"], "p");

  ASSERT_TRUE(new_fake.wait_initialized());
  ASSERT_TRUE(wait_ready(sb, owner_.secret, "alpha"));
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp", alice_.secret, "echo", json{{"new", true}})),
            (json{{"new", true}}));
  EXPECT_EQ(new_fake.calls().size(), 1u);
  EXPECT_EQ(old_fake->calls().size(), 1u);
  // A new socket numbers its requests from 1 again: the handshake, then the call.
  EXPECT_EQ(new_fake.requests("initialize").at(0)["id"], 1);
  EXPECT_EQ(new_fake.calls().at(0)["id"], 2);

  const auto takeover = sb.audit().wait_for("vm_takeover");
  ASSERT_TRUE(takeover);
  EXPECT_EQ((*takeover)["computer"], "alpha");
  EXPECT_EQ((*takeover)["old_generation"], 1);
  EXPECT_EQ((*takeover)["new_generation"], 2);
  EXPECT_TRUE(sb.audit().wait_for("vm_detach", fields_equal({{"generation", 1}, {"code", 4002}})));
  EXPECT_FALSE(new_fake.closed());
  // The takeover line comes before the new socket's vm_attach.
  std::vector<std::string> order;
  for (const auto& line : sb.audit().lines()) {
    const std::string event = line.value("event", "");
    if (event == "vm_takeover" || event == "vm_attach") order.push_back(event);
  }
  EXPECT_EQ(order, (std::vector<std::string>{"vm_attach", "vm_takeover", "vm_attach"}));
}

TEST_F(Relay, AComputerThatVanishesMidCallGives32004Promptly) {
  SwitchboardProcess sb(config());
  auto fake = attach_ready(sb, alpha_, "alpha", owner_.secret);
  ASSERT_TRUE(fake);
  // default_secs is 20: an answer well before that is the disconnect, not a timeout.
  const auto started = Clock::now();
  const json reply =
      call_tool(sb.port(), "/mcp", alice_.secret, "echo", json{{"mode", "drop"}}, 11);
  EXPECT_EQ(error_code(reply), kDisconnected) << reply;
  EXPECT_EQ(reply["id"], 11);
  EXPECT_LT(elapsed_since(started), 5s);
  const auto line = sb.audit().wait_for("call", fields_equal({{"outcome", "disconnected"}}));
  ASSERT_TRUE(line);
  EXPECT_EQ((*line)["error_code"], kDisconnected);
  EXPECT_TRUE(sb.audit().wait_for("vm_detach", fields_equal({{"computer", "alpha"}})));
  EXPECT_TRUE(wait_not_ready(sb, owner_.secret, "alpha"));
}

TEST_F(Relay, AComputerClosingMidCallIsRecordedWithItsOwnCloseCode) {
  SwitchboardProcess sb(config());
  auto fake = attach_ready(sb, alpha_, "alpha", owner_.secret);
  ASSERT_TRUE(fake);
  const json reply =
      call_tool(sb.port(), "/mcp", alice_.secret, "echo", json{{"mode", "close"}, {"code", 1001}});
  EXPECT_EQ(error_code(reply), kDisconnected) << reply;
  // The detach line carries the code actually received (docs/protocol.md, "Close codes").
  const auto detach = sb.audit().wait_for("vm_detach");
  ASSERT_TRUE(detach);
  EXPECT_EQ((*detach)["code"], 1001) << *detach;
  EXPECT_EQ((*detach)["generation"], 1);
}

TEST_F(Relay, RotatingTheSecretByReloadClosesWith4003AndFailsTheCall) {
  SwitchboardProcess sb(config());
  auto fake = attach_ready(sb, alpha_, "alpha", owner_.secret);
  ASSERT_TRUE(fake);
  CallInFlight pending(sb.port(), "/mcp", alice_.secret, "echo", kHold, "r");
  ASSERT_TRUE(fake->wait_for_calls(1));

  const Secret old_secret = alpha_;
  alpha_ = new_secret();
  sb.reload(config());
  const auto closed = fake->wait_closed();
  ASSERT_TRUE(closed);
  EXPECT_TRUE(closed->close_frame);
  EXPECT_EQ(closed->code, 4003);
  EXPECT_EQ(closed->reason, "the VM secret was revoked or rotated");
  const json lost = pending.wait();
  EXPECT_EQ(error_code(lost), kDisconnected) << lost;
  const auto revoked = sb.audit().wait_for("vm_revoked");
  ASSERT_TRUE(revoked);
  EXPECT_EQ((*revoked)["computer"], "alpha");
  EXPECT_EQ((*revoked)["generation"], 1);
  const auto detach = sb.audit().wait_for("vm_detach");
  ASSERT_TRUE(detach);
  EXPECT_EQ((*detach)["code"], 4003);

  // The old secret is refused now; the new one attaches at once.
  FakeComputer stale(sb.port(), FakeComputerOptions{.secret = old_secret.secret});
  EXPECT_EQ(stale.attach(), 401);
  auto rotated = attach_ready(sb, alpha_, "alpha", owner_.secret);
  ASSERT_TRUE(rotated);
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp", alice_.secret, "echo", json{{"n", 1}})),
            (json{{"n", 1}}));
  // A rotated verifier is a fresh slot: its first attach is generation 1 again.
  EXPECT_TRUE(sb.audit().wait_for_count("vm_attach", 2, fields_equal({{"generation", 1}})));
}

TEST_F(Relay, ARefusedInitializeIsClosedWith4005) {
  SwitchboardProcess sb(config());
  FakeComputer fake(sb.port(),
                    FakeComputerOptions{.secret = alpha_.secret, .init = InitMode::kError});
  ASSERT_EQ(fake.attach(), 101);
  const auto closed = fake.wait_closed();
  ASSERT_TRUE(closed);
  EXPECT_TRUE(closed->close_frame);
  EXPECT_EQ(closed->code, 4005);
  EXPECT_EQ(closed->reason, "MCP initialize failed or timed out");
  const auto detach = sb.audit().wait_for("vm_detach");
  ASSERT_TRUE(detach);
  EXPECT_EQ((*detach)["code"], 4005);
  EXPECT_FALSE(computer_ready(sb, owner_.secret, "alpha"));
  // Nothing but the handshake was ever sent.
  for (const auto& frame : fake.frames()) EXPECT_EQ(frame.value("method", ""), "initialize");
}

// ---------------------------------------------------------------------------------------
// The v1 config keeps its surface

TEST(RelayV1, APureV1ConfigKeepsItsSurface) {
  const Secret vm = new_secret();
  const Secret caller = new_secret();
  SwitchboardProcess sb(ConfigBuilder().vm(vm).client_v1("connect", caller, {"echo"}));
  EXPECT_EQ(http_get(sb.port(), "/readyz").status, 503);
  FakeComputer fake(sb.port(), FakeComputerOptions{.secret = vm.secret});
  ASSERT_EQ(fake.attach(), 101);
  ASSERT_TRUE(eventually([&] { return http_get(sb.port(), "/readyz").status == 200; }));
  EXPECT_EQ(http_get(sb.port(), "/readyz").body, "ok");

  for (const std::string path : {"/mcp", "/mcp/default"}) {
    SCOPED_TRACE(path);
    const json init = post_mcp(sb.port(), path, caller.secret, rpc(1, "initialize")).json();
    EXPECT_NE(init["result"].value("instructions", "").find("`default`"), std::string::npos);
    EXPECT_EQ(tool_names(list_tools(sb.port(), path, caller.secret)),
              (std::vector<std::string>{"echo", "vm_status"}));
    EXPECT_EQ(echoed(call_tool(sb.port(), path, caller.secret, "echo", json{{"p", path}})),
              (json{{"p", path}}));
    EXPECT_EQ(call_tool(sb.port(), path, caller.secret, "slow")["result"]["isError"], true);
  }
  const json status = http_get(sb.port(), "/status", caller.secret).json();
  EXPECT_EQ(status["vm"]["computer"], "default");
  EXPECT_EQ(status["vm"]["attached"], true);
  EXPECT_EQ(status["switchboard"]["name"], "openab-sb");
  // A v1 tools list is a named grant: no peer, no in_flight.
  EXPECT_FALSE(status["vm"].contains("peer"));
  EXPECT_FALSE(status["vm"].contains("in_flight"));
  const json computers = http_get(sb.port(), "/computers", caller.secret).json();
  EXPECT_EQ(computers,
            (json::array(
                {{{"attached", true}, {"default", true}, {"name", "default"}, {"ready", true}}})));
  EXPECT_TRUE(sb.audit().wait_for("vm_attach", fields_equal({{"computer", "default"}})));
}

}  // namespace
}  // namespace sbtest
