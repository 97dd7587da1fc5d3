// One caller's messages answered by northbound MCP against the services without workers:
// the computer named is configured nowhere and never attached, so every answer is the
// switchboard's own and comes before handle_mcp() returns.
#pragma once

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "harness/process.hpp"
#include "supervisor/mcp/handler.hpp"
#include "tests/support/services_without_workers.hpp"

namespace sb::supervisor {

class ExchangeTest : public ::testing::Test {
 protected:
  // The reply to `message`, as JSON; null when the answer is no reply (HTTP 202). Its era
  // is the one its own `_meta` names, as where a caller's message arrives.
  nlohmann::json answer(std::string_view message) {
    std::optional<std::optional<ReplyText>> answered;
    const auto parsed = nlohmann::json::parse(message);
    McpRequest exchange =
        request([&](std::optional<ReplyText> reply) { answered = std::move(reply); });
    exchange.context.era = era_of(parsed);
    handle_mcp(parsed, std::move(exchange));
    EXPECT_TRUE(answered) << "no answer before handle_mcp() returned: " << message;
    if (!answered || !*answered) return nullptr;
    return nlohmann::json::parse((*answered)->head + (*answered)->body);
  }

  McpRequest request(McpDone done) {
    return McpRequest{
        .context = context, .services = parts.services, .config = config, .done = std::move(done)};
  }

  // The audit file's lines so far, after the loop's turn that writes them.
  std::vector<nlohmann::json> audit_lines() {
    io.poll();
    io.restart();
    std::ifstream file(dir.path() / "audit.jsonl");
    std::vector<nlohmann::json> lines;
    for (std::string line; std::getline(file, line);) lines.push_back(nlohmann::json::parse(line));
    return lines;
  }

  harness::TempDir dir{"sb-mcp"};
  boost::asio::io_context io;
  ServicesWithoutWorkers parts{io, dir.path() / "audit.jsonl"};
  std::shared_ptr<const config::Config> config = std::make_shared<config::Config>();
  CallerContext context{
      .caller = "alice", .computer = "alpha", .tools = config::NameList{.names = {"echo"}}};
};

}  // namespace sb::supervisor
