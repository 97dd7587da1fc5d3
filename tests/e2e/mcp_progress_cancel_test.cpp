// End to end: full-fidelity MCP through the relay (docs/protocol.md), while a call runs.
// Progress reaches its own caller with the caller's token and turns the reply into an event
// stream; progress restarts a call's timeout and max_total_secs caps it; every way a call
// ends early tells the computer (notifications/cancelled with its id) and frees the shares
// at once; session ids scope cancellation and are never a gate.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "tests/e2e/fidelity_helpers.hpp"

namespace sbtest {
namespace {

// ---------------------------------------------------------------------------------------
// Progress and the event-stream reply (docs/protocol.md, "Progress and event streams")

TEST_F(Fidelity, ProgressReachesItsCallerWithTheCallersOwnTokenOnAnEventStream) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  OpenCall call(sb.port(),
                post(kPath, alice_.secret, call_with_token("c-1", "echo", hold(1), "alice-job")));
  const json seen = computer_call(*fake, hold(1));
  ASSERT_FALSE(seen.is_null());
  const json token = token_of(seen);
  EXPECT_TRUE(token.is_number_integer())
      << "the computer must see the switchboard's token: " << token;
  EXPECT_EQ(seen["params"]["name"], "echo");

  fake->send_text(progress_notification(token, 1, "warming up").dump());
  expect_event_stream_head(call.head());
  EXPECT_EQ(call.next(), (json{{"jsonrpc", "2.0"},
                               {"method", "notifications/progress"},
                               {"params",
                                {{"progressToken", "alice-job"},
                                 {"progress", 1},
                                 {"total", 3},
                                 {"message", "warming up"}}}}));
  fake->send_text(progress_notification(token, 2, "half way").dump());
  const json second = call.next();
  EXPECT_EQ(second["params"]["progressToken"], "alice-job");
  EXPECT_EQ(second["params"]["progress"], 2);

  // The final response is the last event, then the body ends.
  fake->answer(id_of(seen), text_result("done"));
  const json reply = call.next();
  EXPECT_EQ(reply["id"], "c-1");
  EXPECT_EQ(result_text(reply), "done");
  EXPECT_TRUE(call.next().is_null()) << "the stream went on after the final response";

  // Each message is exactly `event: message` and one `data:` line of JSON.
  const HttpResponse whole = call.rest();
  std::string expected;
  for (const auto& event : call.events()) {
    EXPECT_EQ(event.data.find('\n'), std::string::npos) << event.data;
    expected += "event: message\ndata: " + event.data + "\n\n";
  }
  EXPECT_EQ(whole.body, expected);

  // The connection stays alive: a second request on it is answered.
  const auto again = call.connection().request(post(kPath, alice_.secret, rpc(2, "ping")));
  EXPECT_EQ(again.status, 200);
  EXPECT_EQ(again.json()["id"], 2);
  EXPECT_TRUE(sb.audit().wait_for(
      "call", fields_equal({{"principal", "alice"}, {"tool", "echo"}, {"outcome", "ok"}})));
}

TEST_F(Fidelity, TwoCallersUsingTheSameProgressTokenEachSeeOnlyTheirOwnProgress) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  // Same id, same token, same tool: only the callers differ.
  OpenCall alices(sb.port(), post(kPath, alice_.secret, call_with_token(1, "echo", hold(1), "t")));
  OpenCall bobs(sb.port(), post(kPath, bob_.secret, call_with_token(1, "echo", hold(2), "t")));
  const json alice_seen = computer_call(*fake, hold(1));
  const json bob_seen = computer_call(*fake, hold(2));
  ASSERT_FALSE(alice_seen.is_null() || bob_seen.is_null());
  EXPECT_NE(token_of(alice_seen), token_of(bob_seen)) << "one token for two calls on one socket";

  fake->send_text(progress_notification(token_of(alice_seen), 1, "for alice").dump());
  fake->send_text(progress_notification(token_of(bob_seen), 2, "for bob").dump());
  const json alice_progress = alices.next();
  EXPECT_EQ(alice_progress["params"]["progressToken"], "t");
  EXPECT_EQ(alice_progress["params"]["message"], "for alice");
  const json bob_progress = bobs.next();
  EXPECT_EQ(bob_progress["params"]["progressToken"], "t");
  EXPECT_EQ(bob_progress["params"]["message"], "for bob");

  fake->answer_echo(alice_seen);
  fake->answer_echo(bob_seen);
  EXPECT_EQ(echoed(alices.next()), hold(1));
  EXPECT_EQ(echoed(bobs.next()), hold(2));
  EXPECT_TRUE(alices.next().is_null());
  EXPECT_TRUE(bobs.next().is_null());
  // Each stream held its own progress and its own reply, nothing else.
  EXPECT_EQ(alices.events().size(), 2u);
  EXPECT_EQ(bobs.events().size(), 2u);
  for (const auto& event : alices.events())
    EXPECT_EQ(event.data.find("for bob"), std::string::npos) << event.data;
  for (const auto& event : bobs.events())
    EXPECT_EQ(event.data.find("for alice"), std::string::npos) << event.data;
}

TEST_F(Fidelity, ACallerThatAcceptsOnlyJsonGetsPlainJsonAndNoProgress) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  OpenCall call(sb.port(), post(kPath, alice_.secret, call_with_token(4, "echo", hold(1), "tok"),
                                kAcceptJsonOnly));
  const json seen = computer_call(*fake, hold(1));
  ASSERT_FALSE(seen.is_null());
  fake->send_text(progress_notification(token_of(seen), 1, "nobody listens").dump());
  fake->send_text(progress_notification(token_of(seen), 2, "still nobody").dump());
  fake->answer_echo(seen);
  const HttpResponse response = call.rest();
  expect_plain_json(response);
  EXPECT_EQ(response.json()["id"], 4);
  EXPECT_EQ(echoed(response.json()), hold(1));
  EXPECT_EQ(response.body.find("notifications/progress"), std::string::npos) << response.body;
}

TEST_F(Fidelity, ACallWithNothingToStreamIsPlainJsonEvenWhenTheCallerAcceptsEventStreams) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  const auto response = http(
      sb.port(), post(kPath, alice_.secret, call_with_token(5, "echo", json{{"n", 5}}, "quiet")));
  expect_plain_json(response);
  EXPECT_EQ(response.json()["id"], 5);
  EXPECT_EQ(echoed(response.json()), (json{{"n", 5}}));
  const auto listed = http(sb.port(), post(kPath, alice_.secret, rpc(6, "tools/list")));
  expect_plain_json(listed);
}

// ---------------------------------------------------------------------------------------
// Timeouts (docs/protocol.md, "Progress and event streams")

TEST_F(Fidelity, ProgressRestartsTheCallsTimeout) {
  // A 3 s timeout; the computer reports progress every second for five seconds, then
  // answers. (Two seconds of slack per gap, for a loaded machine.)
  SwitchboardProcess sb(config().timeouts(3, 5, {}));
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  const json arguments = progress_arguments(1000, 5);
  OpenCall call(sb.port(),
                post(kPath, alice_.secret, call_with_token(1, "echo", arguments, "long")));
  expect_event_stream_head(call.head());
  const auto messages = sse_messages(call.rest().body);
  ASSERT_EQ(messages.size(), 6u) << "five progress notifications and the reply";
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(messages[i]["method"], "notifications/progress");
    EXPECT_EQ(messages[i]["params"]["progressToken"], "long");
    EXPECT_EQ(messages[i]["params"]["progress"], i + 1);
  }
  EXPECT_EQ(error_code(messages[5]), 0) << messages[5];
  EXPECT_EQ(messages[5]["id"], 1);
  EXPECT_EQ(echoed(messages[5]), arguments);
  EXPECT_TRUE(
      sb.audit().wait_for("call", fields_equal({{"principal", "alice"}, {"outcome", "ok"}})));
  EXPECT_TRUE(cancels(*fake).empty());
}

TEST_F(Fidelity, ProgressKeepsACallAliveEvenForACallerThatTakesOnlyJson) {
  // The caller sees none of the progress, yet the call outlives its 3 s timeout and the
  // supervisor's backstop (2 s later) alike.
  SwitchboardProcess sb(config().timeouts(3, 5, {}));
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  const json arguments = progress_arguments(1000, 6);
  OpenCall call(sb.port(), post(kPath, alice_.secret, call_with_token(1, "echo", arguments, "json"),
                                kAcceptJsonOnly));
  const HttpResponse response = call.rest();
  expect_plain_json(response);
  EXPECT_EQ(error_code(response.json()), 0) << response.body;
  EXPECT_EQ(echoed(response.json()), arguments);
  EXPECT_TRUE(cancels(*fake).empty());
}

TEST_F(Fidelity, MaxTotalSecsEndsACallWhateverItsProgress) {
  // Progress every second for a minute would keep a 2 s timeout alive; the 3 s cap does not
  // care. (The bounded read below gives up long before the minute.)
  SwitchboardProcess sb(config().timeouts(2, 5, {}).max_total_secs(3));
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  const json arguments = progress_arguments(1000, 60, /*then_hold=*/true);
  OpenCall call(sb.port(),
                post(kPath, alice_.secret, call_with_token(8, "echo", arguments, "cap")));
  expect_event_stream_head(call.head());
  const auto messages = sse_messages(call.rest().body);
  ASSERT_FALSE(messages.empty());
  const json& last = messages.back();
  EXPECT_EQ(error_code(last), kTimeout) << last;
  EXPECT_EQ(last["id"], 8);
  for (std::size_t i = 0; i + 1 < messages.size(); ++i)
    EXPECT_EQ(messages[i]["method"], "notifications/progress") << messages[i];

  const json seen = computer_call(*fake, arguments);
  ASSERT_FALSE(seen.is_null());
  EXPECT_EQ(wait_cancel(*fake, seen["id"]), expected_cancel(seen["id"], "timed out"));
  const auto line = sb.audit().wait_for("call", fields_equal({{"principal", "alice"}}));
  ASSERT_TRUE(line);
  EXPECT_EQ((*line)["outcome"], "timeout");
  EXPECT_EQ((*line)["error_code"], kTimeout);
}

// ---------------------------------------------------------------------------------------
// Cancellation (docs/protocol.md, "Cancellation"). alpha takes one call at a time, so a share not
// given back at once shows as -32002 on the next call.

TEST_F(Fidelity, ACallersCancelReachesTheComputerWithItsIdAndFreesTheShares) {
  HeldEcho held(*this, {.id = "job-1", .alpha_max = 1});
  ASSERT_TRUE(held.ready());

  const auto accepted = http(
      held.sb.port(), post(kPath, alice_.secret, cancel_notification("job-1", "user hit stop")));
  EXPECT_EQ(accepted.status, 202);
  EXPECT_EQ(wait_cancel(*held.fake, held.seen["id"]),
            expected_cancel(held.seen["id"], "user hit stop"));

  const json answer = held.call.rest().final_message();
  EXPECT_EQ(error_code(answer), kRequestCancelled) << answer;
  EXPECT_EQ(answer["id"], "job-1");
  const auto line = held.sb.audit().wait_for("call", fields_equal({{"outcome", "cancelled"}}));
  ASSERT_TRUE(line);
  EXPECT_EQ((*line)["principal"], "alice");
  EXPECT_EQ((*line)["computer"], "alpha");

  expect_shares_free(held.sb, *held.fake);
  // A late answer to the cancelled call goes nowhere; the session is unharmed.
  held.fake->answer_echo(held.seen);
  EXPECT_EQ(echoed(call_tool(held.sb.port(), kPath, bob_.secret, "echo", json{{"n", 3}}, "b")),
            (json{{"n", 3}}));
  EXPECT_EQ(held.sb.audit().count("call", fields_equal({{"outcome", "cancelled"}})), 1u);
}

TEST_F(Fidelity, ACancelWithoutAReasonIsSentAsCancelledByTheCaller) {
  HeldEcho held(*this, {.id = 42, .alpha_max = 1});
  ASSERT_TRUE(held.ready());
  EXPECT_EQ(http(held.sb.port(), post(kPath, alice_.secret, cancel_notification(42))).status, 202);
  EXPECT_EQ(wait_cancel(*held.fake, held.seen["id"]),
            expected_cancel(held.seen["id"], "cancelled by the caller"));
  EXPECT_EQ(error_code(held.call.rest().final_message()), kRequestCancelled);
  expect_shares_free(held.sb, *held.fake);
}

TEST_F(Fidelity, ACallerHangingUpMidCallCancelsItAtTheComputer) {
  SwitchboardProcess sb(config(/*alpha_max=*/1));
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  HttpConnection connection(sb.port());
  connection.send(post(kPath, alice_.secret, tool_call(1, "echo", hold(1))));
  const json seen = computer_call(*fake, hold(1));
  ASSERT_FALSE(seen.is_null());

  connection.close();
  EXPECT_EQ(wait_cancel(*fake, seen["id"]), expected_cancel(seen["id"], "caller disconnected"));
  const auto line = sb.audit().wait_for("call", fields_equal({{"principal", "alice"}}));
  ASSERT_TRUE(line);
  EXPECT_EQ((*line)["outcome"], "abandoned");
  expect_shares_free(sb, *fake);
}

TEST_F(Fidelity, ADeadlinePassingCancelsTheCallAtTheComputer) {
  SwitchboardProcess sb(config(/*alpha_max=*/1));  // slow: 1 s
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  const json reply = call_tool(sb.port(), kPath, alice_.secret, "slow", hold(1), "late");
  EXPECT_EQ(error_code(reply), kTimeout) << reply;
  EXPECT_EQ(reply["id"], "late");
  const json seen = computer_call(*fake, hold(1));
  ASSERT_FALSE(seen.is_null());
  EXPECT_EQ(wait_cancel(*fake, seen["id"]), expected_cancel(seen["id"], "timed out"));
  const auto line = sb.audit().wait_for("call", fields_equal({{"tool", "slow"}}));
  ASSERT_TRUE(line);
  EXPECT_EQ((*line)["outcome"], "timeout");
  expect_shares_free(sb, *fake);
}

TEST_F(Fidelity, ACancelNamingAnotherClientsCallCancelsNothing) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  OpenCall alices(sb.port(), post(kPath, alice_.secret, tool_call(7, "echo", hold(1))));
  OpenCall bobs(sb.port(), post(kPath, bob_.secret, tool_call(8, "echo", hold(2))));
  const json alice_seen = computer_call(*fake, hold(1));
  const json bob_seen = computer_call(*fake, hold(2));
  ASSERT_FALSE(alice_seen.is_null() || bob_seen.is_null());

  // bob names alice's id: he has no call 7.
  EXPECT_EQ(http(sb.port(), post(kPath, bob_.secret, cancel_notification(7, "not yours"))).status,
            202);
  // A later call of bob's is the barrier: a cancel sent before it would have reached the
  // computer first.
  EXPECT_EQ(echoed(call_tool(sb.port(), kPath, bob_.secret, "echo", json{{"n", 9}}, 9)),
            (json{{"n", 9}}));
  EXPECT_TRUE(cancels(*fake).empty()) << cancels(*fake).front();

  fake->answer_echo(alice_seen);
  fake->answer_echo(bob_seen);
  const json alice_reply = alices.rest().final_message();
  EXPECT_EQ(alice_reply["id"], 7);
  EXPECT_EQ(echoed(alice_reply), hold(1));
  const json bob_reply = bobs.rest().final_message();
  EXPECT_EQ(bob_reply["id"], 8);
  EXPECT_EQ(echoed(bob_reply), hold(2));
  EXPECT_EQ(sb.audit().count("call", fields_equal({{"outcome", "cancelled"}})), 0u);
}

// ---------------------------------------------------------------------------------------
// Sessions (docs/protocol.md, "Sessions")

TEST_F(Fidelity, InitializeGivesA32HexSessionIdAndUnknownSessionIdsAreServed) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  const auto first = http(sb.port(), post(kPath, alice_.secret, initialize_request(1)));
  const auto second = http(sb.port(), post(kPath, alice_.secret, initialize_request(2)));
  ASSERT_EQ(first.status, 200);
  const auto session = first.header("Mcp-Session-Id");
  ASSERT_TRUE(session) << "initialize carries no Mcp-Session-Id";
  EXPECT_TRUE(std::regex_match(*session, std::regex("[0-9a-fA-F]{32}"))) << *session;
  EXPECT_NE(second.header("Mcp-Session-Id"), session) << "two initializes, one session";

  // A session the switchboard never issued (say, from before a restart) is no gate.
  const Headers unknown = with(kAcceptBoth, "Mcp-Session-Id", "0123456789abcdef0123456789abcdef");
  const auto call =
      http(sb.port(), post(kPath, alice_.secret, tool_call(3, "echo", json{{"n", 3}}), unknown));
  EXPECT_EQ(call.status, 200) << call.body;
  EXPECT_EQ(echoed(call.final_message()), (json{{"n", 3}}));
  const auto listed = http(sb.port(), post(kPath, alice_.secret, rpc(4, "tools/list"), unknown));
  EXPECT_EQ(listed.status, 200) << listed.body;
  EXPECT_EQ(tool_names(listed.final_message()),
            (std::vector<std::string>{"echo", "slow", "vm_status"}));
  const auto pinged = http(sb.port(), post(kPath, alice_.secret, rpc(5, "ping"), unknown));
  EXPECT_EQ(pinged.status, 200) << pinged.body;
  const auto notified = http(
      sb.port(), post(kPath, alice_.secret,
                      json{{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}, unknown));
  EXPECT_EQ(notified.status, 202) << notified.body;
  // And one it did issue works as well.
  const auto in_session = http(sb.port(), post(kPath, alice_.secret, rpc(6, "ping"),
                                               with(kAcceptBoth, "Mcp-Session-Id", *session)));
  EXPECT_EQ(in_session.status, 200) << in_session.body;
}

TEST_F(Fidelity, ACancelCarryingASessionMatchesOnlyCallsMadeInThatSession) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  const auto s1 =
      http(sb.port(), post(kPath, alice_.secret, initialize_request(1))).header("Mcp-Session-Id");
  const auto s2 =
      http(sb.port(), post(kPath, alice_.secret, initialize_request(2))).header("Mcp-Session-Id");
  ASSERT_TRUE(s1 && s2);
  ASSERT_NE(*s1, *s2);
  const Headers in_s1 = with(kAcceptBoth, "Mcp-Session-Id", *s1);
  const Headers in_s2 = with(kAcceptBoth, "Mcp-Session-Id", *s2);

  OpenCall call(sb.port(), post(kPath, alice_.secret, tool_call(5, "echo", hold(1)), in_s1));
  const json seen = computer_call(*fake, hold(1));
  ASSERT_FALSE(seen.is_null());

  // Same client, same id, another session: nothing.
  EXPECT_EQ(http(sb.port(), post(kPath, alice_.secret, cancel_notification(5, "other tab"), in_s2))
                .status,
            202);
  EXPECT_EQ(echoed(call_tool(sb.port(), kPath, alice_.secret, "echo", json{{"n", 6}}, 6)),
            (json{{"n", 6}}));
  EXPECT_TRUE(cancels(*fake).empty()) << cancels(*fake).front();

  // The call's own session: cancelled.
  EXPECT_EQ(
      http(sb.port(), post(kPath, alice_.secret, cancel_notification(5, "this tab"), in_s1)).status,
      202);
  EXPECT_EQ(wait_cancel(*fake, seen["id"]), expected_cancel(seen["id"], "this tab"));
  EXPECT_EQ(error_code(call.rest().final_message()), kRequestCancelled);
  EXPECT_EQ(cancels(*fake).size(), 1u);
}

}  // namespace
}  // namespace sbtest
