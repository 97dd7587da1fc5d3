// The members 2026-07-28 requires of a result (docs/protocol.md, "Eras"): a list's
// `resultType`, `ttlMs` and `cacheScope` are of the revision's values whatever a computer
// wrote, a narrowed list is never shared, and a caller of an older revision gets none.
#include "supervisor/mcp/result_shape.hpp"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sb::supervisor {
namespace {

using json = nlohmann::json;

json shaped(json list, bool narrowed = false) {
  shape_list(list, narrowed, Era::kStateless);
  return list;
}

TEST(ResultShape, AListKeepsTheComputersHintsWhenTheyAreTheRevisions) {
  const json list = shaped({{"tools", json::array()}, {"ttlMs", 5000}, {"cacheScope", "public"}});
  EXPECT_EQ(list["resultType"], "complete");
  EXPECT_EQ(list["ttlMs"], 5000);
  EXPECT_EQ(list["cacheScope"], "public");
  EXPECT_EQ(shaped({{"tools", json::array()}, {"cacheScope", "public"}}, true)["cacheScope"],
            "private");
}

TEST(ResultShape, AListsGarbageHintsAreReplaced) {
  for (const json& scope :
       {json("garbage"), json(5), json::object(), json(nullptr), json("PUBLIC"), json::array()}) {
    const json list = shaped({{"tools", json::array()}, {"cacheScope", scope}});
    EXPECT_EQ(list["cacheScope"], "private") << scope;
    EXPECT_EQ(list["ttlMs"], 0) << scope;
  }
  for (const json& type :
       {json("input_required"), json("garbage"), json(5), json(nullptr), json::object()}) {
    EXPECT_EQ(shaped({{"tools", json::array()}, {"resultType", type}})["resultType"], "complete")
        << type;
  }
  for (const json& ttl : {json(-1), json(1.5), json("60"), json(nullptr)})
    EXPECT_EQ(shaped({{"tools", json::array()}, {"ttlMs", ttl}})["ttlMs"], 0) << ttl;
}

TEST(ResultShape, AResultKeepsAnInterimTypeAndLosesGarbage) {
  const auto stateless = [](json result) { return complete(std::move(result), Era::kStateless); };
  EXPECT_EQ(stateless(json::object())["resultType"], "complete");
  EXPECT_EQ(stateless({{"resultType", "input_required"}})["resultType"], "input_required");
  EXPECT_EQ(stateless({{"resultType", 5}})["resultType"], "complete");
  EXPECT_EQ(stateless({{"resultType", "Complete"}})["resultType"], "complete");
}

TEST(ResultShape, AHandshakeCallerGetsNoneOfThe2026Members) {
  const json with_all{
      {"cacheScope", "public"}, {"resultType", "complete"}, {"tools", json::array()}, {"ttlMs", 5}};
  EXPECT_EQ(complete(with_all, Era::kHandshake), (json{{"tools", json::array()}}));
  for (const bool narrowed : {false, true}) {
    json list = with_all;
    shape_list(list, narrowed, Era::kHandshake);
    EXPECT_EQ(list, (json{{"tools", json::array()}}));
  }
  EXPECT_EQ(complete(json::object(), Era::kHandshake), json::object());
}

std::string shaped_reply(std::string reply, std::string_view method) {
  shape_reply(reply, method, Era::kStateless);
  return reply;
}

TEST(ResultShape, AnOlderComputersReplyGetsTheMembersA2026CallerRequires) {
  const json call =
      json::parse(shaped_reply(R"({"jsonrpc":"2.0","result":{"content":[]}})", "tools/call"));
  EXPECT_EQ(call["result"]["resultType"], "complete");
  const json read =
      json::parse(shaped_reply(R"({"jsonrpc":"2.0","result":{"contents":[]}})", "resources/read"));
  EXPECT_EQ(read["result"]["resultType"], "complete");
  EXPECT_EQ(read["result"]["ttlMs"], 0);
  EXPECT_EQ(read["result"]["cacheScope"], "private");
}

TEST(ResultShape, AReplyWithTheRevisionsMembersIsLeftByteForByte) {
  for (const auto& [reply, method] : std::vector<std::pair<std::string, std::string>>{
           {R"({"jsonrpc":"2.0","result":{"resultType":"complete","content":[]}})", "tools/call"},
           {R"({"result":{"resultType":"task","taskId":"t"},"jsonrpc":"2.0"})", "tools/call"},
           {R"({"result":{"resultType":"input_required","inputRequests":{}}})", "prompts/get"},
           {R"({"result":{"resultType":"complete","ttlMs":5,"cacheScope":"public"}})",
            "resources/read"},
           {R"({"jsonrpc":"2.0","error":{"code":-32602,"message":"no"}})", "tools/call"}}) {
    EXPECT_EQ(shaped_reply(reply, method), reply) << method;
  }
}

TEST(ResultShape, A2026ComputersReplyReachesAHandshakeCallerWithoutTheRevisionsMembers) {
  std::string read =
      R"({"jsonrpc":"2.0","result":{"cacheScope":"public","contents":[],"resultType":"complete",)"
      R"("ttlMs":5}})";
  shape_reply(read, "resources/read", Era::kHandshake);
  EXPECT_EQ(json::parse(read), json::parse(R"({"jsonrpc":"2.0","result":{"contents":[]}})"));
  for (const std::string reply : {R"({"jsonrpc":"2.0","result":{"content":[]}})",
                                  R"({"jsonrpc":"2.0","error":{"code":-32602,"message":"no"}})"}) {
    std::string shaped = reply;
    shape_reply(shaped, "tools/call", Era::kHandshake);
    EXPECT_EQ(shaped, reply) << "left byte for byte";
  }
}

TEST(ResultShape, ATypeTheMethodMayNotHaveIsReplaced) {
  const json task =
      json::parse(shaped_reply(R"({"result":{"resultType":"task","taskId":"t"}})", "prompts/get"));
  EXPECT_EQ(task["result"]["resultType"], "complete");
  const json asking = json::parse(shaped_reply(
      R"({"result":{"resultType":"input_required","values":[]}})", "completion/complete"));
  EXPECT_EQ(asking["result"]["resultType"], "complete");
  const json garbage = json::parse(shaped_reply(R"({"result":{"resultType":5}})", "tools/call"));
  EXPECT_EQ(garbage["result"]["resultType"], "complete");
}

// Tasks across eras (docs/protocol.md, "Tasks across eras"): each era's shape of a created
// task, a task's state and a cancel's answer, whichever era the computer answered in.
json reshaped(const std::string& reply, std::string_view method, Era era) {
  std::string text = reply;
  shape_reply(text, method, era);
  return json::parse(text)["result"];
}

TEST(ResultShape, ACreatedTaskTakesTheShapeOfTheCallersEra) {
  const std::string handshake =
      R"({"result":{"_meta":{"k":1},"task":{"taskId":"t","status":"working","ttl":60000,)"
      R"("pollInterval":1000,"createdAt":"c","lastUpdatedAt":"u"}}})";
  EXPECT_EQ(reshaped(handshake, "tools/call", Era::kStateless),
            json::parse(R"({"_meta":{"k":1},"resultType":"task","taskId":"t","status":"working",)"
                        R"("ttlMs":60000,"pollIntervalMs":1000,"createdAt":"c",)"
                        R"("lastUpdatedAt":"u"})"));
  const std::string stateless =
      R"({"result":{"_meta":{"k":1},"resultType":"task","taskId":"t","status":"working",)"
      R"("ttlMs":60000,"pollIntervalMs":1000}})";
  EXPECT_EQ(reshaped(stateless, "tools/call", Era::kHandshake),
            json::parse(R"({"_meta":{"k":1},"task":{"taskId":"t","status":"working",)"
                        R"("ttl":60000,"pollInterval":1000}})"));
  // Without a ttl the handshake era's required member is null.
  EXPECT_EQ(reshaped(R"({"result":{"resultType":"task","taskId":"t","status":"working"}})",
                     "tools/call", Era::kHandshake)["task"]["ttl"],
            nullptr);
}

TEST(ResultShape, ATasksStateTakesTheShapeOfTheCallersEra) {
  const json stateless =
      reshaped(R"({"result":{"resultType":"complete","taskId":"t","status":"completed","ttlMs":5,)"
               R"("pollIntervalMs":7,"result":{"content":[]},"inputRequests":{}}})",
               "tasks/get", Era::kHandshake);
  EXPECT_EQ(stateless, json::parse(R"({"taskId":"t","status":"completed","ttl":5,)"
                                   R"("pollInterval":7})"));
  const json handshake =
      reshaped(R"({"result":{"taskId":"t","status":"working","ttl":null,"pollInterval":-3}})",
               "tasks/get", Era::kStateless);
  EXPECT_EQ(handshake, json::parse(R"({"resultType":"complete","taskId":"t","status":"working"})"))
      << "a null ttl and a negative interval are no milliseconds";
}

TEST(ResultShape, ACancelsAnswerTakesTheShapeOfTheCallersEra) {
  EXPECT_EQ(reshaped(R"({"result":{"taskId":"t","status":"cancelled","ttl":null}})", "tasks/cancel",
                     Era::kStateless),
            json::parse(R"({"resultType":"complete"})"));
  EXPECT_EQ(reshaped(R"({"result":{"resultType":"complete","taskId":"t","status":"cancelled"}})",
                     "tasks/cancel", Era::kHandshake),
            json::parse(R"({"taskId":"t","status":"cancelled","ttl":null})"));
}

}  // namespace
}  // namespace sb::supervisor
