// A computer's tools under the caller's grant (docs/protocol.md, "Tool list"): the list the
// caller sees, vm_status answered by the switchboard, a tool outside the grant refused and
// audited, and one inside it forwarded (here to a computer that is not attached).
#include "supervisor/mcp/tools.hpp"

#include "tests/unit/supervisor/mcp/exchange_fixture.hpp"

namespace sb::supervisor {
namespace {

using json = nlohmann::json;

CallResult replied(std::string reply_without_id) {
  CallResult result{ipc::CallStatus::kReplied, reply_without_id.size()};
  result.reply_without_id = std::move(reply_without_id);
  return result;
}

std::vector<std::string> names_in(const json& list) {
  std::vector<std::string> names;
  for (const auto& tool : list["result"]["tools"]) names.push_back(tool["name"]);
  return names;
}

TEST_F(ExchangeTest, AListKeepsTheGrantedToolsAndPutsTheSwitchboardsVmStatusLast) {
  const auto list = filter_tool_list(
      7, context,
      replied(R"({"jsonrpc":"2.0","result":{"tools":[{"name":"echo"},{"name":"shell"},)"
              R"({"name":"vm_status","description":"the computer's own"},"junk"],"x":1}})"),
      parts.tools_list_errors);
  EXPECT_EQ(list["id"], 7);
  EXPECT_EQ(names_in(list), (std::vector<std::string>{"echo", "vm_status"}));
  EXPECT_EQ(list["result"]["tools"][1], status_tool_definition("alpha"));
  EXPECT_EQ(list["result"]["x"], 1) << "the rest of the computer's result is kept";
}

TEST_F(ExchangeTest, AListNarrowedForTheCallerIsPrivateAndAWholeOneKeepsItsScope) {
  const std::string reply =
      R"({"result":{"cacheScope":"public","tools":[{"name":"echo"}],"ttlMs":300000}})";
  context.era = Era::kStateless;
  const auto narrowed = filter_tool_list(1, context, replied(reply), parts.tools_list_errors);
  EXPECT_EQ(narrowed["result"]["cacheScope"], "private");
  EXPECT_EQ(narrowed["result"]["ttlMs"], 300000);
  CallerContext every_tool = context;
  every_tool.tools = config::NameList{.all = true};
  const auto whole = filter_tool_list(1, every_tool, replied(reply), parts.tools_list_errors);
  EXPECT_EQ(whole["result"]["cacheScope"], "public");
}

TEST_F(ExchangeTest, AHandshakeCallersListHasNoneOfThe2026Members) {
  const std::string reply = R"({"result":{"cacheScope":"public","resultType":"complete",)"
                            R"("tools":[{"name":"echo"}],"ttlMs":300000}})";
  for (const auto& caller : {context, CallerContext{.tools = config::NameList{.all = true}}}) {
    const auto list = filter_tool_list(1, caller, replied(reply), parts.tools_list_errors);
    EXPECT_EQ(list["result"].size(), 1u) << list;
    EXPECT_EQ(list["result"]["tools"].size(), 2u);
  }
}

TEST_F(ExchangeTest, AListIsVmStatusAloneWhenTheComputerGivesNone) {
  const std::vector<std::string> status_only{"vm_status"};
  EXPECT_EQ(names_in(filter_tool_list(1, context, CallResult{ipc::CallStatus::kNotAttached},
                                      parts.tools_list_errors)),
            status_only);
  EXPECT_EQ(names_in(filter_tool_list(1, context, replied(R"({"error":{"code":-1}})"),
                                      parts.tools_list_errors)),
            status_only);
  EXPECT_EQ(names_in(filter_tool_list(1, context, replied(R"({"result":{"tools":{}}})"),
                                      parts.tools_list_errors)),
            status_only);
  EXPECT_EQ(names_in(filter_tool_list(1, context, replied("not json"), parts.tools_list_errors)),
            status_only);
  EXPECT_EQ(filter_tool_list(1, context, CallResult{ipc::CallStatus::kOverloaded},
                             parts.tools_list_errors)["error"]["code"],
            -32002);
  EXPECT_EQ(names_in(answer(R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})")), status_only);
}

TEST_F(ExchangeTest, VmStatusIsAnsweredByTheSwitchboardAndAudited) {
  const auto result = answer(
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"vm_status"}})")["result"];
  EXPECT_EQ(result["isError"], false);
  EXPECT_EQ(result["structuredContent"],
            (json{{"attached", false}, {"computer", "alpha"}, {"ready", false}}));
  const auto lines = audit_lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["tool"], "vm_status");
  EXPECT_EQ(lines[0]["outcome"], "ok");
}

TEST_F(ExchangeTest, AToolOutsideTheGrantIsRefusedAsAToolErrorAndAudited) {
  const auto result = answer(R"({"jsonrpc":"2.0","id":1,"method":"tools/call",)"
                             R"("params":{"name":"shell","arguments":{"cmd":"ls"}}})")["result"];
  EXPECT_EQ(result["isError"], true);
  EXPECT_EQ(result["content"][0]["text"],
            "the switchboard's policy does not allow `shell` for `alice` on `alpha`");
  EXPECT_FALSE(result.contains("resultType"));
  // A 2026-07-28 client refuses a result without it (docs/protocol.md, "Eras").
  const auto stateless =
      answer(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shell",)"
             R"("_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}})")["result"];
  EXPECT_EQ(stateless["isError"], true);
  EXPECT_EQ(stateless["resultType"], "complete");
  const auto lines = audit_lines();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["outcome"], "denied");
  EXPECT_EQ(lines[0]["principal"], "alice");
  EXPECT_EQ(lines[0]["args"], R"({"cmd":"ls"})");
}

TEST_F(ExchangeTest, AGrantedToolOfAComputerNotAttachedIsAnsweredSo) {
  const auto result = answer(
      R"({"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"echo"}})")["result"];
  EXPECT_EQ(result["isError"], true);
  const auto lines = audit_lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["outcome"], "not_attached");
  EXPECT_EQ(lines[0]["error_code"], -32001);
}

TEST_F(ExchangeTest, AToolCallNeedsANameOfOneTo128Characters) {
  EXPECT_EQ(
      answer(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}})")["error"]["message"],
      "tools/call needs params.name");
  EXPECT_EQ(
      answer(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":""}})")["error"]
                                                                                      ["message"],
      "params.name must be 1-128 characters");
  EXPECT_EQ(answer(R"({"jsonrpc":"2.0","id":1,"method":"tools/call",)"
                   R"("params":{"name":"echo","arguments":[]}})")["error"]["message"],
            "params.arguments must be an object");
  EXPECT_TRUE(audit_lines().empty()) << "a malformed call is no call";
}

}  // namespace
}  // namespace sb::supervisor
