// The audit log's writing (docs/protocol.md, "Audit log"): the call line composed without a
// JSON tree reads exactly as the general path writes it (a traced call's span among it),
// every line reaches the sink that sends it as a log record, and lines wait for the end of
// the loop turn, not longer.
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

// A traced call's line names its span, in the order the general path would write it; and
// with a sink (docs/observability.md, "The audit as logs") every line written also goes to
// it, with its event, and a call's with its span.
TEST(AuditLog, ATracedCallsLineNamesItsSpanAndEveryLineReachesTheSink) {
  const harness::TempDir dir("sb-audit");
  const auto path = dir.path() / "audit.jsonl";
  boost::asio::io_context io;
  AuditLog log(io, path);
  struct Handed {
    std::string event, line, trace_id, span_id;
  };
  std::vector<Handed> handed;
  log.set_line_sink([&](std::string_view event, const std::string& line, std::string_view trace_id,
                        std::string_view span_id) {
    handed.push_back({std::string(event), line, std::string(trace_id), std::string(span_id)});
  });
  const nlohmann::json no_args = nullptr;
  const std::string trace = "4bf92f3577b34da6a3ce929d0e0e4736";
  const std::string span = "00f067aa0ba902b7";
  log.write_call(CallRecord{.principal = "agent",
                            .trace_id = trace,
                            .span_id = span,
                            .computer = "alpha",
                            .tool = "echo",
                            .outcome = "ok",
                            .args = no_args});
  log.write("call", {{"principal", "agent"},
                     {"trace_id", trace},
                     {"span_id", span},
                     {"computer", "alpha"},
                     {"tool", "echo"},
                     {"kind", "tool"},
                     {"outcome", "ok"},
                     {"error_code", nullptr},
                     {"ms", 0},
                     {"response_bytes", 0},
                     {"args", no_args}});
  log.write("config_reloaded", nlohmann::json::object());
  log.write_from_worker(R"({"event":"computer_attached","computer":"alpha"})");
  io.poll();
  const auto lines = lines_of(path);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(without_time(lines[0]), without_time(lines[1]));
  ASSERT_EQ(handed.size(), 4u);
  EXPECT_EQ(handed[0].event, "call");
  EXPECT_EQ(handed[0].line, lines[0]);
  EXPECT_EQ(handed[0].trace_id, trace);
  EXPECT_EQ(handed[0].span_id, span);
  EXPECT_EQ(handed[2].event, "config_reloaded");
  EXPECT_EQ(handed[2].line, lines[2]);
  EXPECT_EQ(handed[2].trace_id, "");
  EXPECT_EQ(handed[3].event, "computer_attached");
  EXPECT_EQ(handed[3].line, lines[3]);
  log.set_line_sink(nullptr);
  log.write("config_reloaded", nlohmann::json::object());
  EXPECT_EQ(handed.size(), 4u) << "no sink, nothing handed";
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
