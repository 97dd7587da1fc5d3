// The audit log's writing (docs/protocol.md, "Audit log"): the call line composed without a
// JSON tree reads exactly as the general path writes it, and lines wait for the end of the
// loop turn, not longer.
#include "supervisor/audit/audit_log.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "harness/process.hpp"

namespace sb::supervisor {
namespace {

std::vector<std::string> lines_of(const std::filesystem::path& path) {
  std::ifstream file(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(file, line);) lines.push_back(line);
  return lines;
}

std::string without_time(const std::string& line) {
  return std::regex_replace(line, std::regex(R"("ts":"[^"]*")"), R"("ts":"T")");
}

TEST(AuditLog, TheCallLineReadsAsTheGeneralPathWritesIt) {
  const harness::TempDir dir("sb-audit");
  const auto path = dir.path() / "audit.jsonl";
  boost::asio::io_context io;
  AuditLog log(io, path);
  // Plain ASCII is quoted as it is; every other byte takes the general path's escaping.
  const std::vector<std::string> principals = {"a \"quoted\" caller\t\u00e9\x01", "back\\slash",
                                               "del\x7f", " ~/plain!"};
  const nlohmann::json args = R"({"k":"v"})";
  const nlohmann::json no_args = nullptr;
  for (const auto* arguments : {&args, &no_args}) {
    for (const std::optional<std::int64_t> code :
         {std::optional<std::int64_t>(-32601), std::optional<std::int64_t>()}) {
      for (const auto& principal : principals) {
        log.write_call(CallRecord{.principal = principal,
                                  .computer = "alpha",
                                  .tool = "echo",
                                  .outcome = "rpc_error",
                                  .error_code = code,
                                  .ms = 12,
                                  .response_bytes = 345,
                                  .args = *arguments});
        log.write("call", {{"principal", principal},
                           {"computer", "alpha"},
                           {"tool", "echo"},
                           {"kind", "tool"},
                           {"outcome", "rpc_error"},
                           {"error_code", code ? nlohmann::json(*code) : nlohmann::json(nullptr)},
                           {"ms", 12},
                           {"response_bytes", 345},
                           {"args", *arguments}});
      }
    }
  }
  EXPECT_TRUE(lines_of(path).empty()) << "nothing is written before the turn ends";
  io.poll();
  const auto lines = lines_of(path);
  ASSERT_EQ(lines.size(), 2 * 2 * 2 * principals.size());
  for (std::size_t i = 0; i < lines.size(); i += 2) {
    EXPECT_EQ(without_time(lines[i]), without_time(lines[i + 1]));
    EXPECT_TRUE(nlohmann::json::parse(lines[i], nullptr, false).is_object()) << lines[i];
  }
}

TEST(AuditLog, WhatATurnLeftIsWrittenWhenTheLogCloses) {
  const harness::TempDir dir("sb-audit");
  const auto path = dir.path() / "audit.jsonl";
  boost::asio::io_context io;
  {
    AuditLog log(io, path);
    log.write("config_reloaded", nlohmann::json::object());
  }  // the loop never ran
  const auto lines = lines_of(path);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(nlohmann::json::parse(lines[0])["event"], "config_reloaded");
}

// A switch in place or a stop ends the window early: the next process starts its own and
// would never report what this one held back.
TEST(AuditLog, WhatTheCapsHeldBackIsWrittenWhenTheLogStops) {
  const harness::TempDir dir("sb-audit");
  const auto path = dir.path() / "audit.jsonl";
  boost::asio::io_context io;
  AuditLog log(io, path, std::chrono::hours(1));
  for (int i = 0; i < 25; ++i) log.auth_failure("client_auth_fail", "127.0.0.1");
  log.stop();
  const auto lines = lines_of(path);
  ASSERT_EQ(lines.size(), 21u);
  const auto last = nlohmann::json::parse(lines.back());
  EXPECT_EQ(last["event"], "auth_failures_suppressed");
  EXPECT_EQ(last["count"], 5);
}

}  // namespace
}  // namespace sb::supervisor
