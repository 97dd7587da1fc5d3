// Tasks belong to the client that created them, for as long as the computer's session
// that created them lasts (docs/protocol.md, "Tasks").
#include "supervisor/mcp/tasks.hpp"

#include "tests/unit/supervisor/mcp/exchange_fixture.hpp"

namespace sb::supervisor {
namespace {

TEST_F(ExchangeTest, AListShowsOnlyTheCallersOwnTasksOfThisSession) {
  const SessionKey session{"alpha", 1000};
  parts.tasks.record(session, "t-alice", "alice");
  parts.tasks.record(session, "t-bob", "bob");
  parts.tasks.record(SessionKey{"alpha", 2000}, "t-old", "alice");
  const auto kept = filter_task_list(
      R"({"jsonrpc":"2.0","result":{"tasks":[{"taskId":"t-alice"},{"taskId":"t-bob"},)"
      R"({"taskId":"t-old"},{"no":"id"}],"nextCursor":"c"}})",
      "x", parts.tasks, session, "alice");
  ASSERT_TRUE(kept);
  EXPECT_EQ((*kept)["id"], "x");
  EXPECT_EQ((*kept)["result"]["tasks"], (nlohmann::json::array({{{"taskId", "t-alice"}}})));
  EXPECT_EQ((*kept)["result"]["nextCursor"], "c");
  EXPECT_FALSE(filter_task_list(R"({"result":{}})", "x", parts.tasks, session, "alice"));
}

TEST_F(ExchangeTest, ATaskTheCallerDoesNotOwnIsNoSuchTask) {
  for (const char* method : {"tasks/get", "tasks/result", "tasks/cancel"}) {
    const auto reply = answer(std::string(R"({"jsonrpc":"2.0","id":1,"method":")") + method +
                              R"(","params":{"taskId":"t-bob"}})");
    EXPECT_EQ(reply["error"]["code"], -32602) << method;
    EXPECT_EQ(reply["error"]["message"], "no such task") << method;
  }
}

TEST_F(ExchangeTest, WithNoSessionAttachedTheTaskListIsEmpty) {
  EXPECT_EQ(answer(R"({"jsonrpc":"2.0","id":1,"method":"tasks/list"})")["result"],
            (nlohmann::json{{"tasks", nlohmann::json::array()}}));
}

}  // namespace
}  // namespace sb::supervisor
