// A call's one record: the audit line and the metrics alike, and what it shows of the
// arguments.
#include "supervisor/mcp/call_audit.hpp"

#include "tests/unit/supervisor/mcp/exchange_fixture.hpp"

namespace sb::supervisor {
namespace {

TEST_F(ExchangeTest, AReplyIsAuditedByWhatTheWorkersScanFoundInIt) {
  const CallAudit audit{.services = parts.services,
                        .principal = "alice",
                        .computer = "alpha",
                        .tool = "echo",
                        .tool_label = "echo",
                        .args = nullptr,
                        .started = std::chrono::steady_clock::now(),
                        .forwarded = true};
  audit.write_reply(ipc::ReplyKind::kOk, std::nullopt, 10);
  audit.write_reply(ipc::ReplyKind::kToolError, std::nullopt, 11);
  audit.write_reply(ipc::ReplyKind::kRpcError, -32050, 12);
  const auto lines = audit_lines();
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0]["outcome"], "ok");
  EXPECT_EQ(lines[1]["outcome"], "tool_error");
  EXPECT_EQ(lines[2]["outcome"], "rpc_error");
  EXPECT_EQ(lines[2]["error_code"], -32050);
  EXPECT_EQ(lines[2]["response_bytes"], 12);
  EXPECT_TRUE(lines[0]["args"].is_null());
}

TEST(AuditArgs, AreNullWhenOffEmptyWhenAbsentAndCutTo512Characters) {
  EXPECT_TRUE(audit_args(false, R"({"a":1})").is_null());
  EXPECT_EQ(audit_args(true, std::nullopt), "");
  EXPECT_EQ(audit_args(true, R"({"a":1})"), R"({"a":1})");
  // 600 two-byte characters: cut after 512 of them, not 512 bytes.
  std::string long_text;
  for (int i = 0; i < 600; ++i) long_text += "\u00e9";
  const std::string cut = audit_args(true, long_text);
  EXPECT_EQ(cut, long_text.substr(0, 1024) + "\u2026");
}

}  // namespace
}  // namespace sb::supervisor
