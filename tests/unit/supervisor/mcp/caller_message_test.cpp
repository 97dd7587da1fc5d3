// A caller's message read once, by the rules both transports share: what is read as a
// tree, and what is refused with which error.
#include "supervisor/mcp/caller_message.hpp"

#include <gtest/gtest.h>

#include <string>

#include "ipc/frame.hpp"
#include "shared/jsonrpc.hpp"

namespace sb::supervisor {
namespace {

using json = nlohmann::json;
using namespace std::string_literals;

// The refusal's code, or 0 when the message was read.
int refused_with(std::string_view text) {
  const auto read = read_caller_message(text);
  const auto* refusal = std::get_if<MessageRefusal>(&read);
  return refusal ? refusal->code : 0;
}

TEST(CallerMessage, AnObjectIsReadAsItsTree) {
  const auto read = read_caller_message(R"({"jsonrpc":"2.0","id":1,"method":"ping"})");
  ASSERT_TRUE(std::holds_alternative<json>(read));
  EXPECT_EQ(std::get<json>(read)["method"], "ping");
}

TEST(CallerMessage, WhatIsNotOneJsonTextIsAParseError) {
  EXPECT_EQ(refused_with(""), jsonrpc::kParseError);
  EXPECT_EQ(refused_with("{"), jsonrpc::kParseError);
  EXPECT_EQ(refused_with(R"({"id":1} {"id":2})"), jsonrpc::kParseError);
}

TEST(CallerMessage, ANulByteIsAParseErrorNotTheEndOfTheText) {
  EXPECT_EQ(refused_with("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\0junk"s),
            jsonrpc::kParseError);
}

TEST(CallerMessage, NestingPastTheLimitIsAParseError) {
  const std::string deep(jsonrpc::kMaxNesting + 1, '[');
  EXPECT_EQ(refused_with(deep + std::string(jsonrpc::kMaxNesting + 1, ']')), jsonrpc::kParseError);
}

TEST(CallerMessage, ANumberBeyondADoubleIsAnInvalidRequest) {
  EXPECT_EQ(refused_with(R"({"jsonrpc":"2.0","id":1e400,"method":"ping"})"),
            jsonrpc::kInvalidRequest);
}

TEST(CallerMessage, ABatchIsAnInvalidRequest) {
  const auto read = read_caller_message(R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])");
  ASSERT_TRUE(std::holds_alternative<MessageRefusal>(read));
  EXPECT_EQ(std::get<MessageRefusal>(read).code, jsonrpc::kInvalidRequest);
  EXPECT_EQ(std::get<MessageRefusal>(read).message, "JSON-RPC batches are not supported");
}

TEST(CallerMessage, AMessageLargerThanAFrameCarriesIsRefusedBeforeItIsRead) {
  const std::string huge(ipc::kMaxMessageSize + 1, ' ');
  ASSERT_TRUE(refuse_size(huge));
  EXPECT_EQ(refuse_size(huge)->code, jsonrpc::kInvalidRequest);
  EXPECT_EQ(refused_with(huge), jsonrpc::kInvalidRequest);
  EXPECT_FALSE(refuse_size(std::string(ipc::kMaxMessageSize, ' ')));
}

}  // namespace
}  // namespace sb::supervisor
