// The envelope of a caller's message (docs/protocol.md, "POST /mcp"): what is refused
// before any method is looked at, what is swallowed, and the methods the switchboard does
// not serve.
#include "tests/unit/supervisor/mcp/exchange_fixture.hpp"

namespace sb::supervisor {
namespace {

TEST_F(ExchangeTest, AMessageThatIsNoRequestIsRefusedWithoutAnId) {
  const auto not_object = answer("[1]");
  EXPECT_EQ(not_object["error"]["code"], -32600);
  EXPECT_TRUE(not_object["id"].is_null());
  const auto float_id = answer(R"({"jsonrpc":"2.0","id":1.5,"method":"ping"})");
  EXPECT_EQ(float_id["error"]["message"], "id must be a string or an integer within 64 bits");
  const auto object_id = answer(R"({"jsonrpc":"2.0","id":{},"method":"ping"})");
  EXPECT_EQ(object_id["error"]["message"], "id must be a string, a number or null");
  const auto no_method = answer(R"({"jsonrpc":"2.0","id":7})");
  EXPECT_EQ(no_method["error"]["message"], "missing method");
  EXPECT_EQ(no_method["id"], 7);
}

TEST_F(ExchangeTest, NotificationsAndUnmatchedResponsesAreSwallowed) {
  EXPECT_TRUE(answer(R"({"jsonrpc":"2.0","method":"notifications/initialized"})").is_null());
  EXPECT_TRUE(
      answer(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}})")
          .is_null());
  EXPECT_TRUE(answer(R"({"jsonrpc":"2.0","id":"sb-1","result":{}})").is_null());
}

TEST_F(ExchangeTest, PingIsAnsweredAndAnUnknownMethodIsNotServed) {
  EXPECT_EQ(answer(R"({"jsonrpc":"2.0","id":"p","method":"ping"})")["result"],
            nlohmann::json::object());
  const auto unknown = answer(R"({"jsonrpc":"2.0","id":2,"method":"sampling/createMessage"})");
  EXPECT_EQ(unknown["error"]["code"], -32601);
  EXPECT_EQ(unknown["error"]["message"],
            "method `sampling/createMessage` is not served by the switchboard");
}

}  // namespace
}  // namespace sb::supervisor
