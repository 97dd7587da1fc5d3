// initialize, server/discover and logging/setLevel as the switchboard answers them itself
// (docs/protocol.md, "Revisions").
#include "supervisor/mcp/lifecycle.hpp"

#include "tests/unit/supervisor/mcp/exchange_fixture.hpp"

namespace sb::supervisor {
namespace {

std::string initialize_asking(std::string_view version) {
  return R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":")" +
         std::string(version) + R"("}})";
}

TEST_F(ExchangeTest, InitializeNegotiatesTheCallersRevisionWhenItIsSpoken) {
  EXPECT_EQ(answer(initialize_asking("2025-06-18"))["result"]["protocolVersion"], "2025-06-18");
  EXPECT_EQ(answer(initialize_asking("2024-11-05"))["result"]["protocolVersion"], "2024-11-05");
  // The stateless revision is never negotiated, and an unknown one gets the newest.
  EXPECT_EQ(answer(initialize_asking("2026-07-28"))["result"]["protocolVersion"], "2025-11-25");
  EXPECT_EQ(answer(initialize_asking("1999-01-01"))["result"]["protocolVersion"], "2025-11-25");
}

TEST_F(ExchangeTest, InitializeOfAComputerThatIsNotAttachedSaysSo) {
  const auto result = answer(initialize_asking("2025-11-25"))["result"];
  EXPECT_EQ(result["capabilities"], (nlohmann::json{{"tools", {{"listChanged", false}}}}));
  EXPECT_EQ(result["instructions"], instructions("alpha", false));
  EXPECT_NE(result["instructions"].get<std::string>().find("not connected"), std::string::npos);
  EXPECT_EQ(result["serverInfo"]["name"], "openab-sb");
}

TEST_F(ExchangeTest, DiscoverListsEveryRevision) {
  const auto result = answer(R"({"jsonrpc":"2.0","id":1,"method":"server/discover"})")["result"];
  EXPECT_EQ(result["resultType"], "complete");
  EXPECT_EQ(result["supportedVersions"],
            (nlohmann::json{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"}));
  EXPECT_EQ(result["_meta"]["io.modelcontextprotocol/serverInfo"], result["serverInfo"]);
}

TEST_F(ExchangeTest, ALogLevelIsToldItTookWhateverTheComputer) {
  EXPECT_EQ(answer(R"({"jsonrpc":"2.0","id":1,"method":"logging/setLevel",)"
                   R"("params":{"level":"debug"}})")["result"],
            nlohmann::json::object());
}

TEST(ProtocolVersions, AreTheFiveRevisions) {
  EXPECT_TRUE(supported_protocol_version("2026-07-28"));
  EXPECT_TRUE(supported_protocol_version("2024-11-05"));
  EXPECT_FALSE(supported_protocol_version("2024-10-07"));
  EXPECT_EQ(supported_protocol_versions_text(),
            "2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25, 2026-07-28");
}

}  // namespace
}  // namespace sb::supervisor
