// The worker's conversations across eras, in process (session_rig.hpp; docs/protocol.md,
// "Tasks across eras" and "Eras"): a handshake-era caller's tasks/result on a 2026-only
// computer as tasks/get polls with its questions asked and answered by tasks/update, its
// tasks/cancel followed by tasks/get; a 2026-07-28 caller's tasks/get of a handshake-era
// computer's ended task with the result fetched, and of an asking task with its questions
// heard through tasks/result; a request's log level set on a handshake-era computer; and a
// call's retry carried in a parked session's record.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "tests/unit/worker/session_rig.hpp"
#include "worker/computer_session.hpp"

namespace sb::worker {
namespace {

using namespace session_rig;

const json kModernMeta{{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                       {"io.modelcontextprotocol/clientCapabilities",
                        {{"extensions", {{"io.modelcontextprotocol/tasks", json::object()}}}}}};

// Forwards `method` and runs until it has reached the computer; each reply so far counts as
// delivered, so that the caller's share of the caps holds only what is in flight.
void forward(SessionRig& rig, std::uint64_t call_id, const std::string& method, const json& params,
             bool stream = false) {
  for (const auto& reply : rig.replies) rig.session().delivered(reply.call_id);
  rig.session().forward(ForwardedCall{.call_id = call_id,
                                      .caller = "alice",
                                      .timeout = 60s,
                                      .method = method,
                                      .params_json = params.dump(),
                                      .stream = stream});
  rig.settle();
}

void answer(SessionRig& rig, const json& request, const json& result) {
  rig.send(json{{"jsonrpc", "2.0"}, {"id", request["id"]}, {"result", result}});
}

json reply_of(const SessionRig& rig, std::size_t index = 0) {
  return index < rig.replies.size() ? json::parse(rig.replies[index].body) : json();
}

TEST(SessionTasks, AHandshakeCallersTaskResultIsTasksGetUntilTheTaskEnds) {
  SessionRig rig;
  discover_as_2026_only(
      rig, {{"supportedVersions", {"2026-07-28"}},
            {"capabilities",
             {{"extensions",
               kModernMeta["io.modelcontextprotocol/clientCapabilities"]["extensions"]}}}});
  forward(rig, 7, "tasks/result", {{"taskId", "t1"}}, /*stream=*/true);
  const json first = rig.last_received();
  ASSERT_EQ(first["method"], "tasks/get") << "2026-07-28 has no tasks/result";
  EXPECT_EQ(first["params"]["taskId"], "t1");
  EXPECT_TRUE(
      first["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"].contains(
          "io.modelcontextprotocol/tasks"));
  answer(rig, first, {{"taskId", "t1"}, {"status", "working"}, {"pollIntervalMs", 100}});
  ASSERT_TRUE(rig.run_until([&] { return rig.last_received()["id"] != first["id"]; }));
  const json second = rig.last_received();
  EXPECT_EQ(second["method"], "tasks/get") << "asked again after the interval";

  // The task asks: the question goes to the caller, the answer back with tasks/update.
  answer(rig, second,
         {{"taskId", "t1"},
          {"status", "input_required"},
          {"inputRequests",
           {{"k1", {{"method", "elicitation/create"}, {"params", {{"message", "Sure?"}}}}}}}});
  ASSERT_EQ(rig.messages.size(), 1u);
  EXPECT_EQ(rig.messages[0].body["method"], "elicitation/create");
  const json accepted{{"action", "accept"}};
  rig.session().answer(7, rig.messages[0].meta.key,
                       json{{"jsonrpc", "2.0"}, {"result", accepted}}.dump());
  rig.settle();
  const json update = rig.last_received();
  ASSERT_EQ(update["method"], "tasks/update");
  EXPECT_EQ(update["params"]["taskId"], "t1");
  EXPECT_EQ(update["params"]["inputResponses"], (json{{"k1", accepted}}));
  answer(rig, update, json::object());
  ASSERT_TRUE(rig.run_until([&] { return rig.last_received()["id"] != update["id"]; }));
  const json third = rig.last_received();
  EXPECT_EQ(third["method"], "tasks/get");
  EXPECT_TRUE(rig.replies.empty()) << "nothing for the caller until the task has ended";

  answer(rig, third, {{"taskId", "t1"}, {"status", "completed"}, {"result", {{"content", 1}}}});
  ASSERT_EQ(rig.replies.size(), 1u);
  EXPECT_EQ(rig.replies[0].call_id, 7u);
  EXPECT_EQ(reply_of(rig)["result"],
            (json{{"content", 1},
                  {"_meta", {{"io.modelcontextprotocol/related-task", {{"taskId", "t1"}}}}}}));
}

TEST(SessionTasks, AHandshakeCallersCancelIsAnsweredWithTheTask) {
  SessionRig rig;
  discover_as_2026_only(rig, {{"supportedVersions", {"2026-07-28"}}});
  forward(rig, 8, "tasks/cancel", {{"taskId", "t2"}});
  const json cancel = rig.last_received();
  ASSERT_EQ(cancel["method"], "tasks/cancel");
  answer(rig, cancel, {{"resultType", "complete"}});
  const json get = rig.last_received();
  ASSERT_EQ(get["method"], "tasks/get");
  answer(rig, get, {{"taskId", "t2"}, {"status", "cancelled"}});
  ASSERT_EQ(rig.replies.size(), 1u);
  EXPECT_EQ(reply_of(rig)["result"]["status"], "cancelled");
}

TEST(SessionTasks, A2026CallersGetOfAnEndedTaskHasItsResultFetched) {
  SessionRig rig;
  rig.handshake({{"tools", json::object()},
                 {"tasks", {{"requests", {{"tools", {{"call", json::object()}}}}}}}});
  forward(rig, 9, "tasks/get", {{"taskId", "t3"}, {"_meta", kModernMeta}});
  const json get = rig.last_received();
  answer(rig, get, {{"taskId", "t3"}, {"status", "completed"}, {"ttl", 1000}});
  const json result = rig.last_received();
  ASSERT_EQ(result["method"], "tasks/result");
  EXPECT_EQ(result["params"]["taskId"], "t3");
  answer(rig, result, {{"content", json::array()}});
  ASSERT_EQ(rig.replies.size(), 1u);
  EXPECT_EQ(reply_of(rig)["result"], (json{{"taskId", "t3"},
                                           {"status", "completed"},
                                           {"ttl", 1000},
                                           {"result", {{"content", json::array()}}}}))
      << "the supervisor renames the members for the caller's era";
}

TEST(SessionTasks, A2026CallerHearsAHandshakeEraTasksQuestionsAndAnswersThem) {
  SessionRig rig;
  rig.handshake({{"tools", json::object()},
                 {"tasks", {{"requests", {{"tools", {{"call", json::object()}}}}}}}});
  forward(rig, 10, "tasks/get", {{"taskId", "t4"}, {"_meta", kModernMeta}});
  answer(rig, rig.last_received(), {{"taskId", "t4"}, {"status", "input_required"}});
  const json watch = rig.last_received();
  ASSERT_EQ(watch["method"], "tasks/result") << "the computer asks through it";
  ASSERT_EQ(rig.replies.size(), 1u);
  EXPECT_FALSE(reply_of(rig)["result"].contains("inputRequests")) << "nothing asked yet";

  rig.send(json{{"jsonrpc", "2.0"},
                {"id", "q-1"},
                {"method", "elicitation/create"},
                {"params",
                 {{"message", "Which?"},
                  {"_meta", {{"io.modelcontextprotocol/related-task", {{"taskId", "t4"}}}}}}}});
  EXPECT_TRUE(rig.messages.empty()) << "held for the task, not routed to a call";
  forward(rig, 11, "tasks/get", {{"taskId", "t4"}, {"_meta", kModernMeta}});
  answer(rig, rig.last_received(), {{"taskId", "t4"}, {"status", "input_required"}});
  ASSERT_EQ(rig.replies.size(), 2u);
  const json requests = reply_of(rig, 1)["result"]["inputRequests"];
  ASSERT_EQ(requests.size(), 1u) << reply_of(rig, 1);
  const std::string key = requests.begin().key();
  EXPECT_EQ(requests[key]["method"], "elicitation/create");
  EXPECT_EQ(requests[key]["params"]["message"], "Which?");

  const std::size_t sent_before = rig.received().size();
  forward(rig, 12, "tasks/update",
          {{"taskId", "t4"},
           {"inputResponses", {{key, {{"action", "accept"}}}, {"sb999", json::object()}}},
           {"_meta", kModernMeta}});
  ASSERT_EQ(rig.received().size(), sent_before + 1) << "one answer, to the question asked";
  EXPECT_EQ(rig.last_received(),
            (json{{"jsonrpc", "2.0"}, {"id", "q-1"}, {"result", {{"action", "accept"}}}}));
  ASSERT_EQ(rig.replies.size(), 3u);
  EXPECT_EQ(reply_of(rig, 2)["result"], json::object());

  // The watch ends with the computer's answer to its tasks/result; a later update of the
  // task reaches the computer as it is.
  answer(rig, watch, {{"content", json::array()}});
  EXPECT_EQ(rig.replies.size(), 3u) << "nobody waits for the watch's answer";
  forward(rig, 13, "tasks/update", {{"taskId", "t4"}, {"_meta", kModernMeta}});
  EXPECT_EQ(rig.last_received()["method"], "tasks/update");
}

TEST(SessionTasks, ARequestsLogLevelIsSetOnAHandshakeEraComputerOnceItChanges) {
  SessionRig rig;
  rig.handshake({{"tools", json::object()}, {"logging", json::object()}});
  json params = echo(1);
  params["_meta"] = {{"io.modelcontextprotocol/logLevel", "warning"}};
  rig.forward(1, params);
  const std::size_t after_first = rig.received().size();
  ASSERT_GE(after_first, 3u);
  const json set = rig.received_at(after_first - 2);
  EXPECT_EQ(set["method"], "logging/setLevel");
  EXPECT_EQ(set["params"], (json{{"level", "warning"}}));
  answer(rig, set, json::object());
  EXPECT_TRUE(rig.replies.empty()) << "nobody waits for its answer";
  answer(rig, rig.last_received(), json::object());
  rig.forward(2, params);
  EXPECT_EQ(rig.received().size(), after_first + 1) << "the same level is not set again";
  answer(rig, rig.last_received(), json::object());
  params["_meta"] = {{"io.modelcontextprotocol/logLevel", "loud"}};
  for (const auto& reply : rig.replies) rig.session().delivered(reply.call_id);
  rig.forward(3, params);
  EXPECT_EQ(rig.received().size(), after_first + 2) << "a level MCP does not have is none";
}

TEST(SessionTasks, ACallThatMayBeAskedCrossesASwitchWithItsRetry) {
  SessionRig rig;
  discover_as_2026_only(rig, {{"supportedVersions", {"2026-07-28"}}});
  rig.forward(14, echo(1), /*stream=*/true);
  std::optional<ipc::ParkedSession> record;
  rig.session().park(1s, [&](ipc::ParkedSession parked) { record = std::move(parked); });
  ASSERT_TRUE(rig.run_until([&] { return record.has_value(); }));
  ASSERT_EQ(record->calls.size(), 1u);
  EXPECT_EQ(record->calls[0].ask_method, "tools/call");
  EXPECT_EQ(json::parse(record->calls[0].ask_params)["arguments"], echo(1)["arguments"]);
  std::string why;
  EXPECT_TRUE(ipc::decode_parked_session(ipc::encode(*record), why)) << why;
}

}  // namespace
}  // namespace sb::worker
