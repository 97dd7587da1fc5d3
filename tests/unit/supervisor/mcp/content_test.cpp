// Resources, prompts and completions under the caller's grant (docs/protocol.md,
// "Resources, prompts and completions"), as the switchboard answers them itself: nothing
// granted is an empty list or an unknown item, byte for byte the same whether or not it
// exists, and a request that names nothing is refused. The relayed side is tested end to
// end (tests/e2e/content_test.cpp).
#include "supervisor/mcp/prompts.hpp"
#include "supervisor/mcp/resources.hpp"
#include "tests/unit/supervisor/mcp/exchange_fixture.hpp"

namespace sb::supervisor {
namespace {

using json = nlohmann::json;

json with(json result, const std::string& empty_list) {
  result[empty_list] = json::array();
  return result;
}

// `method` with the `_meta` a 2026-07-28 request carries.
std::string stateless(std::string_view method) {
  std::string message = R"({"jsonrpc":"2.0","id":1,"method":")";
  message += method;
  message += R"(","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}})";
  return message;
}

TEST_F(ExchangeTest, ACallerGrantedNoResourcesOrPromptsSeesEmptyLists) {
  EXPECT_EQ(answer(R"({"jsonrpc":"2.0","id":1,"method":"resources/list"})")["result"],
            with(json::object(), "resources"));
  EXPECT_EQ(answer(R"({"jsonrpc":"2.0","id":2,"method":"resources/templates/list"})")["result"],
            with(json::object(), "resourceTemplates"));
  EXPECT_EQ(answer(R"({"jsonrpc":"2.0","id":3,"method":"prompts/list"})")["result"],
            with(json::object(), "prompts"));
  EXPECT_EQ(answer(R"({"jsonrpc":"2.0","id":4,"method":"completion/complete","params":)"
                   R"({"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"a",)"
                   R"("value":"b"}}})")["result"]["completion"]["values"],
            json::array());
}

TEST_F(ExchangeTest, A2026CallersEmptyListsAreShapedAsItsRevisionHasLists) {
  // Typed, not to be cached, this caller's own.
  const json shape{{"cacheScope", "private"}, {"resultType", "complete"}, {"ttlMs", 0}};
  EXPECT_EQ(answer(stateless("resources/list"))["result"], with(shape, "resources"));
  EXPECT_EQ(answer(stateless("resources/templates/list"))["result"],
            with(shape, "resourceTemplates"));
  EXPECT_EQ(answer(stateless("prompts/list"))["result"], with(shape, "prompts"));
}

TEST_F(ExchangeTest, AResourceOrPromptOutsideTheGrantIsAnsweredAsAnUnknownOne) {
  const auto read = answer(
      R"({"jsonrpc":"2.0","id":"r","method":"resources/read","params":{"uri":"file:///x"}})");
  EXPECT_EQ(read, unknown_resource("r", "file:///x"));
  EXPECT_EQ(read["error"]["code"], -32602);
  const auto get =
      answer(R"({"jsonrpc":"2.0","id":"p","method":"prompts/get","params":{"name":"greet"}})");
  EXPECT_EQ(get, unknown_prompt("p", "greet"));
  const auto audit = audit_lines();
  ASSERT_EQ(audit.size(), 2u);
  EXPECT_EQ(audit[0]["kind"], "resource");
  EXPECT_EQ(audit[0]["uri"], "file:///x");
  EXPECT_EQ(audit[0]["outcome"], "denied");
  EXPECT_FALSE(audit[0].contains("tool"));
  EXPECT_EQ(audit[1]["kind"], "prompt");
  EXPECT_EQ(audit[1]["prompt"], "greet");
}

TEST_F(ExchangeTest, AReadOrGetThatNamesNothingIsRefused) {
  EXPECT_EQ(
      answer(R"({"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":7}})")["error"]
                                                                                        ["code"],
      -32602);
  EXPECT_EQ(answer(R"({"jsonrpc":"2.0","id":1,"method":"prompts/get"})")["error"]["message"],
            "prompts/get needs params.name");
}

TEST_F(ExchangeTest, AGrantedReadToAComputerNotAttachedIsTheRelaysError) {
  context.resources = config::UriPatterns{.all = true};
  EXPECT_EQ(answer(R"({"jsonrpc":"2.0","id":1,"method":"resources/read","params":)"
                   R"({"uri":"file:///x"}})")["error"]["code"],
            -32001);
  EXPECT_EQ(answer(R"({"jsonrpc":"2.0","id":2,"method":"resources/list"})")["result"]["resources"],
            json::array());
}

}  // namespace
}  // namespace sb::supervisor
