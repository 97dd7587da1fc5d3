// Log messages for a 2026-07-28 caller (docs/protocol.md, "Eras"): none unless its request
// named a level, then only those at that level or above; every other message passes.
#include "supervisor/mcp/log_levels.hpp"

#include <gtest/gtest.h>

#include <string>

#include "tests/unit/supervisor/mcp/exchange_fixture.hpp"

namespace sb::supervisor {
namespace {

std::string log_message(std::string_view level) {
  std::string message = R"({"jsonrpc":"2.0","method":"notifications/message","params":{"level":")";
  message += level;
  message += R"(","data":"x"}})";
  return message;
}

TEST(LogLevels, ARequestThatNamedNoLevelGetsNoLogMessage) {
  EXPECT_FALSE(stateless_caller_takes(log_message("emergency"), ""));
  EXPECT_TRUE(stateless_caller_takes(
      R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}})", ""));
}

TEST(LogLevels, OnlyMessagesAtTheNamedLevelOrAbovePass) {
  EXPECT_TRUE(stateless_caller_takes(log_message("warning"), "warning"));
  EXPECT_TRUE(stateless_caller_takes(log_message("error"), "warning"));
  EXPECT_FALSE(stateless_caller_takes(log_message("info"), "warning"));
  EXPECT_TRUE(stateless_caller_takes(log_message("debug"), "debug"));
  EXPECT_FALSE(stateless_caller_takes(log_message("loud"), "debug")) << "not a level";
  EXPECT_FALSE(stateless_caller_takes(
      R"({"jsonrpc":"2.0","method":"notifications/message","params":{}})", "debug"));
}

TEST_F(ExchangeTest, TheRequestedLevelIsOneOfMcpsOrNone) {
  const auto level_of = [&](const std::string& meta) {
    const auto message = nlohmann::json::parse(
        R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":)" + meta + "}}");
    McpRequest request = this->request([](std::optional<ReplyText>) {});
    return requested_log_level(Exchange{message, message["id"], request});
  };
  EXPECT_EQ(level_of(R"({"io.modelcontextprotocol/logLevel":"notice"})"), "notice");
  EXPECT_EQ(level_of(R"({"io.modelcontextprotocol/logLevel":"NOTICE"})"), "");
  EXPECT_EQ(level_of(R"({"io.modelcontextprotocol/logLevel":3})"), "");
  EXPECT_EQ(level_of("{}"), "");
}

}  // namespace
}  // namespace sb::supervisor
