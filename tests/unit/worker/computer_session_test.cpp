// The worker's session with its computer, in process and in milliseconds (session_rig.hpp):
// the handshake, calls, replies, progress, cancels, timeouts, a parked session's record, and
// a 2026-only computer's discovery, asks and listen.
#include "worker/computer_session.hpp"

#include <gtest/gtest.h>

#include <optional>

#include "tests/unit/worker/session_rig.hpp"

namespace sb::worker {
namespace {

using namespace session_rig;

TEST(ComputerSession, OpensWithInitializeAndIsReadyOnceTheComputerAnswers) {
  SessionRig rig;
  ASSERT_EQ(rig.received().size(), 1u);
  EXPECT_EQ(rig.received_at(0)["method"], "initialize");
  EXPECT_EQ(rig.session().status().state, ipc::ComputerState::kHandshaking);
  rig.handshake();
  EXPECT_EQ(rig.last_received()["method"], "notifications/initialized");
  EXPECT_EQ(rig.session().status().state, ipc::ComputerState::kReady);
  EXPECT_NE(rig.session().status().server_json.find("\"rig\""), std::string::npos);
}

TEST(ComputerSession, ACallGoesOutUnderTheSessionsIdAndItsReplyComesBackWithoutOne) {
  SessionRig rig;
  rig.handshake();
  rig.forward(7, echo(1));
  const json sent = rig.last_received();
  ASSERT_EQ(sent["method"], "tools/call");
  EXPECT_EQ(sent["params"], echo(1));
  rig.send(json{{"jsonrpc", "2.0"}, {"id", sent["id"]}, {"result", {{"n", 1}}}});
  ASSERT_EQ(rig.replies.size(), 1u);
  EXPECT_EQ(rig.replies[0].call_id, 7u);
  EXPECT_EQ(rig.replies[0].outcome.status, ipc::CallStatus::kReplied);
  const json body = json::parse(rig.replies[0].body);
  EXPECT_FALSE(body.contains("id"));
  EXPECT_EQ(body["result"], (json{{"n", 1}}));
}

TEST(ComputerSession, ProgressReachesTheCallerWithItsOwnToken) {
  SessionRig rig;
  rig.handshake();
  json params = echo(2);
  params["_meta"] = {{"progressToken", "caller-token"}};
  rig.forward(8, params, /*stream=*/true);
  const json sent = rig.last_received();
  const json session_token = sent["params"]["_meta"]["progressToken"];
  EXPECT_NE(session_token, "caller-token") << "the computer sees the session's own token";
  rig.send(json{{"jsonrpc", "2.0"},
                {"method", "notifications/progress"},
                {"params", {{"progressToken", session_token}, {"progress", 1}}}});
  ASSERT_EQ(rig.messages.size(), 1u);
  EXPECT_EQ(rig.messages[0].call_id, 8u);
  EXPECT_EQ(rig.messages[0].meta.kind, ipc::MessageKind::kProgress);
  EXPECT_EQ(rig.messages[0].body["params"]["progressToken"], "caller-token");
}

TEST(ComputerSession, ACancelledCallIsCancelledTowardTheComputerAndItsLateReplyDropped) {
  SessionRig rig;
  rig.handshake();
  rig.forward(9, echo(3));
  const json sent = rig.last_received();
  rig.session().cancel(9, "cancelled by the caller");
  rig.settle();
  const json cancel = rig.last_received();
  EXPECT_EQ(cancel["method"], "notifications/cancelled");
  EXPECT_EQ(cancel["params"]["requestId"], sent["id"]);
  rig.send(json{{"jsonrpc", "2.0"}, {"id", sent["id"]}, {"result", json::object()}});
  EXPECT_TRUE(rig.replies.empty()) << "a cancelled call has no outcome";
}

TEST(ComputerSession, ACallPastItsTimeoutIsAnsweredTimedOutAndCancelledTowardTheComputer) {
  SessionRig rig;
  rig.handshake();
  rig.forward(10, echo(4), false, 1ms);
  ASSERT_TRUE(rig.run_until([&] { return !rig.replies.empty(); }));
  EXPECT_EQ(rig.replies[0].call_id, 10u);
  EXPECT_EQ(rig.replies[0].outcome.status, ipc::CallStatus::kTimeout);
  EXPECT_GT(rig.replies[0].outcome.sent_unix_nanos, 0u) << "for its span: when it was sent";
  EXPECT_EQ(rig.last_received()["method"], "notifications/cancelled");
}

TEST(ComputerSession, ACallCutOffByItsSocketClosingSaysWhenItWasSent) {
  SessionRig rig;
  rig.handshake();
  rig.forward(13, echo(7));
  rig.session().close(close_code::kGoingAway);
  ASSERT_TRUE(rig.run_until([&] { return !rig.replies.empty(); }));
  EXPECT_EQ(rig.replies[0].call_id, 13u);
  EXPECT_EQ(rig.replies[0].outcome.status, ipc::CallStatus::kDisconnected);
  EXPECT_GT(rig.replies[0].outcome.sent_unix_nanos, 0u) << "for its span: when it was sent";
}

TEST(ComputerSession, AReplySaysWhenItsRequestWasSentAndWhenItsFirstAndLastBytesCame) {
  SessionRig rig;
  rig.handshake();
  rig.forward(12, echo(6));
  const json sent = rig.last_received();
  rig.send_in_two_frames(json{{"jsonrpc", "2.0"},
                              {"id", sent["id"]},
                              {"result", {{"content", json::array()}, {"padding", "0123456789"}}}});
  ASSERT_EQ(rig.replies.size(), 1u);
  const ipc::CallOutcome& outcome = rig.replies[0].outcome;
  EXPECT_GT(outcome.sent_unix_nanos, 0u);
  EXPECT_LE(outcome.sent_unix_nanos, outcome.first_byte_unix_nanos);
  EXPECT_LT(outcome.first_byte_unix_nanos, outcome.replied_unix_nanos)
      << "its first frame was read before its last";
}

TEST(ComputerSession, AReplyNoCallWaitsForIsDroppedAndTheSessionGoesOn) {
  SessionRig rig;
  rig.handshake();
  rig.send(json{{"jsonrpc", "2.0"}, {"id", 999}, {"result", json::object()}});
  EXPECT_TRUE(rig.replies.empty());
  EXPECT_TRUE(rig.session().live());
  rig.forward(11, echo(5));
  const json sent = rig.last_received();
  rig.send(json{{"jsonrpc", "2.0"}, {"id", sent["id"]}, {"result", json::object()}});
  ASSERT_EQ(rig.replies.size(), 1u);
  EXPECT_EQ(rig.replies[0].call_id, 11u);
}

TEST(ComputerSession, AParkedSessionLeavesARecordOfItsCallsAndTheSocketOpen) {
  SessionRig rig;
  rig.handshake();
  rig.forward(12, echo(6));
  const json sent = rig.last_received();
  std::optional<ipc::ParkedSession> record;
  rig.session().park(1s, [&](ipc::ParkedSession parked) { record = std::move(parked); });
  ASSERT_TRUE(rig.run_until([&] { return record.has_value(); }));
  EXPECT_EQ(record->generation, 1u);
  EXPECT_EQ(record->peer, "100.64.0.7");
  ASSERT_EQ(record->calls.size(), 1u);
  EXPECT_EQ(record->calls[0].call_id, 12u);
  EXPECT_GT(record->next_id, sent["id"].get<std::uint64_t>());
  EXPECT_EQ(rig.ended, 0) << "parking is not an end: the computer sees nothing";
  EXPECT_NE(rig.last_received()["method"], "notifications/cancelled");
}

TEST(ComputerSession, A2026OnlyComputerIsDiscoveredAndEveryRequestCarriesItsRevisionsMeta) {
  SessionRig rig;
  rig.send(unsupported_revision(rig.received_at(0), {"2026-07-28"}));
  const json discover = rig.last_received();
  ASSERT_EQ(discover["method"], "server/discover");
  EXPECT_EQ(discover["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"], "2026-07-28");
  EXPECT_EQ(rig.session().status().state, ipc::ComputerState::kHandshaking);
  rig.send(json{{"jsonrpc", "2.0"},
                {"id", discover["id"]},
                {"result",
                 {{"resultType", "complete"},
                  {"supportedVersions", {"2026-07-28"}},
                  {"capabilities", {{"tools", json::object()}, {"prompts", json::object()}}},
                  {"_meta", {{"io.modelcontextprotocol/serverInfo", {{"name", "modern"}}}}}}}});
  EXPECT_EQ(rig.session().status().state, ipc::ComputerState::kReady);
  EXPECT_EQ(rig.session().status().offers, ipc::offer::kPrompts | ipc::offer::kStatelessOnly);
  EXPECT_NE(rig.session().status().server_json.find("\"modern\""), std::string::npos);
  EXPECT_EQ(rig.received().size(), 2u) << "no notifications/initialized: it has no handshake";

  json params = echo(1);
  params["_meta"] = {{"progressToken", "t"}, {"traceparent", "00-ab-cd-01"}};
  rig.forward(7, params);
  const json meta = rig.last_received()["params"]["_meta"];
  EXPECT_EQ(meta["io.modelcontextprotocol/protocolVersion"], "2026-07-28");
  EXPECT_EQ(meta["io.modelcontextprotocol/clientCapabilities"], json::object())
      << "a caller of an older revision cannot be sent an input-required result";
  EXPECT_EQ(meta["io.modelcontextprotocol/clientInfo"]["name"], "openab-sb");
  EXPECT_EQ(meta["traceparent"], "00-ab-cd-01");
  EXPECT_TRUE(meta["progressToken"].is_number()) << "the session's own token, as for any";

  params["_meta"] = {
      {"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
      {"io.modelcontextprotocol/clientCapabilities", {{"elicitation", json::object()}}}};
  rig.forward(8, params);
  EXPECT_EQ(rig.last_received()["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"],
            (json{{"elicitation", json::object()}}))
      << "a 2026-07-28 caller's own declaration is what the computer sees";
}

TEST(ComputerSession, ALogLevelSetForA2026OnlyComputerGoesOnEachRequestInstead) {
  SessionRig rig;
  discover_as_2026_only(rig, {{"supportedVersions", {"2026-07-28"}}});
  const std::size_t sent_before = rig.received().size();
  rig.session().forward(ForwardedCall{.call_id = 5,
                                      .caller = "alice",
                                      .timeout = 60s,
                                      .method = "logging/setLevel",
                                      .params_json = R"({"level":"warning"})"});
  rig.settle();
  EXPECT_EQ(rig.received().size(), sent_before) << "the revision has no logging/setLevel";
  ASSERT_EQ(rig.replies.size(), 1u);
  EXPECT_EQ(rig.replies[0].call_id, 5u);
  EXPECT_EQ(json::parse(rig.replies[0].body)["result"], json::object());
  rig.forward(6, echo(1));
  EXPECT_EQ(rig.last_received()["params"]["_meta"]["io.modelcontextprotocol/logLevel"], "warning");
  json params = echo(2);
  params["_meta"] = {{"io.modelcontextprotocol/logLevel", "debug"}};
  rig.forward(7, params);
  EXPECT_EQ(rig.last_received()["params"]["_meta"]["io.modelcontextprotocol/logLevel"], "debug")
      << "a 2026-07-28 caller's own level is kept";
}

json asks_for_name(const json& request) {
  return json{{"jsonrpc", "2.0"},
              {"id", request["id"]},
              {"result",
               {{"resultType", "input_required"},
                {"inputRequests",
                 {{"ask", {{"method", "elicitation/create"}, {"params", {{"message", "Name?"}}}}}}},
                {"requestState", "s1"}}}};
}

TEST(ComputerSession, A2026OnlyComputersInputRequiredIsAskedOfTheCallerAndTheCallRetried) {
  SessionRig rig;
  discover_as_2026_only(rig, {{"supportedVersions", {"2026-07-28"}}});
  rig.forward(7, echo(1), /*stream=*/true);
  const json sent = rig.last_received();
  EXPECT_EQ(sent["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"],
            (json{{"elicitation", json::object()},
                  {"roots", json::object()},
                  {"sampling", json::object()}}))
      << "a caller that takes messages can be asked";
  rig.send(asks_for_name(sent));
  EXPECT_TRUE(rig.replies.empty()) << "the call waits for its caller's answer";
  ASSERT_EQ(rig.messages.size(), 1u);
  EXPECT_EQ(rig.messages[0].call_id, 7u);
  EXPECT_EQ(rig.messages[0].meta.kind, ipc::MessageKind::kRequest);
  EXPECT_EQ(rig.messages[0].body, (json{{"jsonrpc", "2.0"},
                                        {"method", "elicitation/create"},
                                        {"params", {{"message", "Name?"}}}}));

  const json accepted{{"action", "accept"}, {"content", {{"name", "ada"}}}};
  rig.session().answer(7, rig.messages[0].meta.key,
                       json{{"jsonrpc", "2.0"}, {"result", accepted}}.dump());
  rig.settle();
  const json retry = rig.last_received();
  ASSERT_EQ(retry["method"], "tools/call");
  EXPECT_NE(retry["id"], sent["id"]) << "a new request on the socket";
  EXPECT_EQ(retry["params"]["inputResponses"], (json{{"ask", accepted}}));
  EXPECT_EQ(retry["params"]["requestState"], "s1");
  EXPECT_EQ(retry["params"]["arguments"], sent["params"]["arguments"]);
  rig.send(json{{"jsonrpc", "2.0"}, {"id", retry["id"]}, {"result", {{"n", 1}}}});
  ASSERT_EQ(rig.replies.size(), 1u);
  EXPECT_EQ(rig.replies[0].call_id, 7u);
  EXPECT_EQ(json::parse(rig.replies[0].body)["result"], (json{{"n", 1}}));
}

TEST(ComputerSession, ACallersRefusalToBeAskedEndsTheCallWithIt) {
  SessionRig rig;
  discover_as_2026_only(rig, {{"supportedVersions", {"2026-07-28"}}});
  rig.forward(8, echo(1), /*stream=*/true);
  rig.send(asks_for_name(rig.last_received()));
  ASSERT_EQ(rig.messages.size(), 1u);
  const std::size_t sent_before = rig.received().size();
  rig.session().answer(8, rig.messages[0].meta.key,
                       R"({"jsonrpc":"2.0","error":{"code":-32601,"message":"no"}})");
  rig.settle();
  EXPECT_EQ(rig.received().size(), sent_before) << "nothing is retried";
  ASSERT_EQ(rig.replies.size(), 1u);
  EXPECT_EQ(rig.replies[0].outcome.kind, ipc::ReplyKind::kRpcError);
  EXPECT_EQ(json::parse(rig.replies[0].body)["error"]["code"], -32601);
}

// Subscribes (or unsubscribes) `uri` for caller `call_id` as the supervisor does, once
// the replies so far have left it.
void follow(SessionRig& rig, std::uint64_t call_id, const std::string& uri,
            const std::string& method = "resources/subscribe") {
  for (const Reply& reply : rig.replies) rig.session().delivered(reply.call_id);
  rig.session().forward(ForwardedCall{.call_id = call_id,
                                      .caller = "alice",
                                      .timeout = 10s,
                                      .method = method,
                                      .params_json = json{{"uri", uri}}.dump()});
  rig.settle();
}

// A message of the computer's about listen `id`, as the official 2026-07-28 server stamps it.
json stamped(const std::string& method, json params, const json& id) {
  params["_meta"] = {{"io.modelcontextprotocol/subscriptionId", id}};
  return json{{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}};
}

json acknowledged(const json& listen) {
  json params = json::object();
  params["notifications"] = listen["params"]["notifications"];
  return stamped("notifications/subscriptions/acknowledged", std::move(params), listen["id"]);
}

json updated(const std::string& uri, const json& listen) {
  json params = json::object();
  params["uri"] = uri;
  return stamped("notifications/resources/updated", std::move(params), listen["id"]);
}

TEST(ComputerSession, A2026OnlyComputerFollowsTheSubscribedResourcesInOneListen) {
  SessionRig rig;
  discover_as_2026_only(rig, {{"supportedVersions", {"2026-07-28"}},
                              {"capabilities", {{"resources", {{"subscribe", true}}}}}});
  follow(rig, 5, "demo://a");
  const json first = rig.last_received();
  ASSERT_EQ(first["method"], "subscriptions/listen");
  EXPECT_EQ(first["params"]["notifications"]["resourceSubscriptions"], json::array({"demo://a"}));
  EXPECT_EQ(first["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"], "2026-07-28");
  EXPECT_TRUE(rig.replies.empty()) << "answered once the computer follows it";
  rig.send(acknowledged(first));
  ASSERT_EQ(rig.replies.size(), 1u);
  EXPECT_EQ(rig.replies[0].call_id, 5u);
  EXPECT_EQ(json::parse(rig.replies[0].body),
            (json{{"jsonrpc", "2.0"}, {"result", json::object()}}));

  rig.send(updated("demo://a", first));
  ASSERT_EQ(rig.messages.size(), 1u);
  EXPECT_EQ(rig.messages[0].call_id, 0u) << "the supervisor knows the subscribers";
  EXPECT_EQ(rig.messages[0].body["params"], (json{{"uri", "demo://a"}}))
      << "the worker's subscription id means nothing to a caller";

  follow(rig, 6, "demo://b");
  const json second = rig.last_received();
  EXPECT_EQ(second["params"]["notifications"]["resourceSubscriptions"],
            json::array({"demo://a", "demo://b"}));
  rig.send(updated("demo://a", first));
  rig.send(updated("demo://b", second));
  EXPECT_EQ(rig.messages.size(), 2u) << "until it is acknowledged, the first listen is the one";
  rig.send(acknowledged(second));
  EXPECT_EQ(rig.replies.back().call_id, 6u);
  EXPECT_EQ(rig.last_received()["method"], "notifications/cancelled");
  EXPECT_EQ(rig.last_received()["params"]["requestId"], first["id"]);
  rig.send(updated("demo://a", first));
  rig.send(updated("demo://a", second));
  ASSERT_EQ(rig.messages.size(), 3u) << "none twice";

  const std::size_t sent = rig.received().size();
  follow(rig, 7, "demo://b");
  EXPECT_EQ(rig.received().size(), sent) << "followed already";
  EXPECT_EQ(rig.replies.back().call_id, 7u);

  follow(rig, 8, "demo://a", "resources/unsubscribe");
  const json third = rig.last_received();
  EXPECT_EQ(third["params"]["notifications"]["resourceSubscriptions"], json::array({"demo://b"}));
  rig.send(acknowledged(third));
  EXPECT_EQ(rig.replies.back().call_id, 8u);
  EXPECT_EQ(rig.last_received()["params"]["requestId"], second["id"]);

  follow(rig, 9, "demo://b", "resources/unsubscribe");
  EXPECT_EQ(rig.replies.back().call_id, 9u) << "nothing left to follow: answered at once";
  EXPECT_EQ(rig.last_received()["method"], "notifications/cancelled");
  EXPECT_EQ(rig.last_received()["params"]["requestId"], third["id"]);
}

TEST(ComputerSession, A2026OnlyComputersListChangesAreListenedForFromTheStart) {
  SessionRig rig;
  discover_as_2026_only(
      rig, {{"supportedVersions", {"2026-07-28"}},
            {"capabilities",
             {{"tools", {{"listChanged", true}}}, {"resources", {{"subscribe", true}}}}}});
  const json first = rig.last_received();
  ASSERT_EQ(first["method"], "subscriptions/listen") << "as soon as it is ready";
  EXPECT_EQ(first["params"]["notifications"], (json{{"toolsListChanged", true}}));
  rig.send(acknowledged(first));
  EXPECT_TRUE(rig.replies.empty()) << "nobody waited for it";
  json params = json::object();
  rig.send(stamped("notifications/tools/list_changed", params, first["id"]));
  ASSERT_EQ(rig.messages.size(), 1u);
  EXPECT_EQ(rig.messages[0].body["method"], "notifications/tools/list_changed");
  EXPECT_FALSE(rig.messages[0].body.contains("params") &&
               rig.messages[0].body["params"].contains("_meta"));

  follow(rig, 5, "demo://a");
  const json second = rig.last_received();
  EXPECT_EQ(second["params"]["notifications"],
            (json{{"toolsListChanged", true}, {"resourceSubscriptions", {"demo://a"}}}));
  rig.send(acknowledged(second));
  follow(rig, 6, "demo://a", "resources/unsubscribe");
  const json third = rig.last_received();
  EXPECT_EQ(third["method"], "subscriptions/listen") << "the list changes are still followed";
  EXPECT_EQ(third["params"]["notifications"], (json{{"toolsListChanged", true}}));
}

TEST(ComputerSession, AListenTheComputerNeverAcknowledgesTimesOutAndIsCancelled) {
  SessionRig rig;
  discover_as_2026_only(rig, {{"supportedVersions", {"2026-07-28"}},
                              {"capabilities", {{"resources", {{"subscribe", true}}}}}});
  rig.session().forward(ForwardedCall{.call_id = 5,
                                      .caller = "alice",
                                      .timeout = 50ms,
                                      .method = "resources/subscribe",
                                      .params_json = R"({"uri":"demo://a"})"});
  rig.settle();
  const json listen = rig.last_received();
  ASSERT_TRUE(rig.run_until([&] { return !rig.replies.empty(); }));
  EXPECT_EQ(rig.replies[0].outcome.status, ipc::CallStatus::kTimeout);
  // The cancel is written after the reply is given: it reaches the computer a moment later.
  ASSERT_TRUE(
      rig.run_until([&] { return rig.last_received()["method"] == "notifications/cancelled"; }));
  EXPECT_EQ(rig.last_received()["params"]["requestId"], listen["id"]);
}

TEST(ComputerSession, AParkedSessionCarriesItsListenAndLogLevel) {
  SessionRig rig;
  discover_as_2026_only(rig, {{"supportedVersions", {"2026-07-28"}},
                              {"capabilities", {{"resources", {{"subscribe", true}}}}}});
  rig.session().forward(ForwardedCall{.call_id = 4,
                                      .caller = "alice",
                                      .timeout = 10s,
                                      .method = "logging/setLevel",
                                      .params_json = R"({"level":"error"})"});
  follow(rig, 5, "demo://a");
  const json listen = rig.last_received();
  rig.send(acknowledged(listen));
  std::optional<ipc::ParkedSession> record;
  rig.session().park(1s, [&](ipc::ParkedSession parked) { record = std::move(parked); });
  ASSERT_TRUE(rig.run_until([&] { return record.has_value(); }));
  EXPECT_EQ(record->listen_uris, std::vector<std::string>{"demo://a"});
  EXPECT_EQ(record->active_listen, listen["id"].get<std::uint64_t>());
  EXPECT_EQ(record->newest_listen, record->active_listen);
  EXPECT_EQ(record->log_level, "error");
  std::string why;
  EXPECT_TRUE(ipc::decode_parked_session(ipc::encode(*record), why)) << why;
}

TEST(ComputerSession, ARefusedInitializeWithoutTheStatelessRevisionEndsTheSession) {
  SessionRig rig;
  rig.send(unsupported_revision(rig.received_at(0), {"2099-01-01"}));
  EXPECT_EQ(rig.received().size(), 1u) << "nothing is discovered";
  EXPECT_EQ(rig.ended, 1);
}

TEST(ComputerSession, ADiscoverResultWithoutTheStatelessRevisionEndsTheSession) {
  SessionRig rig;
  discover_as_2026_only(rig, {{"supportedVersions", {"2025-11-25"}}});
  EXPECT_EQ(rig.ended, 1);
  EXPECT_NE(rig.session().status().state, ipc::ComputerState::kReady);
}

}  // namespace
}  // namespace sb::worker
