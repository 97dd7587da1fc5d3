// Whole files: the example of docs/configuration.md and the shipped
// packaging/switchboard.toml.example.
#include "supervisor/config/config.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "harness/process.hpp"
#include "tests/unit/supervisor/config/config_test_support.hpp"

namespace sb::config::test {
namespace {

TEST(ConfigExample, SpecExampleParses) {
  const Config config = parse(R"(listen = "127.0.0.1:8790"
max_inflight = 8
audit_args = true
# audit_path = "~/.local/state/openab-sb/audit.jsonl"

[[computer]]
name = "macmini"
secret_sha256 = "@C1@"

[[computer]]
name = "muse-vm"
secret_sha256 = "@C2@"
max_inflight = 4

[timeouts]
default_secs = 60
control_secs = 15
[timeouts.tools]
screenshot = 10
bash = 60

[[client]]
name = "connect"
token_sha256 = "@T1@"
default_computer = "macmini"
computers = { macmini = ["sys_info", "screenshot", "mouse", "key"], muse-vm = ["sys_info"] }

[[client]]
name = "agent"
token_sha256 = "@T2@"
default_computer = "macmini"
computers = { "*" = ["*"] }
)");
  EXPECT_EQ(config.computers.size(), 2u);
  EXPECT_EQ(config.clients.size(), 2u);
  EXPECT_EQ(config.wildcard_clients(), std::vector<std::string>{"agent"});
  EXPECT_TRUE(config.unused_computers().empty());
  EXPECT_EQ(config.timeouts.for_tool("bash"), 60);
  EXPECT_EQ(config.computers[1].max_inflight, 4);
  EXPECT_EQ(config.clients[0].grant.named.size(), 2u);
}

// The shipped example, once its placeholders are replaced with real verifiers, is valid.
std::string filled_example() {
  std::ifstream file(harness::source_dir() / "packaging/switchboard.toml.example");
  std::stringstream buffer;
  buffer << file.rdbuf();
  std::string text = buffer.str();
  const std::string placeholder = "sha256:REPLACE_WITH_VERIFIER";
  int n = 0;
  for (auto at = text.find(placeholder); at != std::string::npos; at = text.find(placeholder)) {
    text.replace(at, placeholder.size(), verifier("example-" + std::to_string(++n)));
  }
  return text;
}

TEST(ConfigExample, ShippedExampleIsValidOnceFilledIn) {
  const std::string text = filled_example();
  ASSERT_FALSE(text.empty());
  ASSERT_EQ(text.find("REPLACE_WITH"), std::string::npos);
  const Config config = sb::config::parse_config(text, kHome);
  EXPECT_FALSE(config.v1_form);
  EXPECT_EQ(config.computers.size(), 2u);
  EXPECT_EQ(config.clients.size(), 2u);
  EXPECT_TRUE(config.unused_computers().empty());
  const auto report = sb::config::check_report(config);
  EXPECT_EQ(report.summary,
            "ok: listen 127.0.0.1:8790, 2 computer(s), 2 client(s), 0 pty attach(es)");
}

TEST(ConfigExample, ShippedExampleIsRefusedWithPlaceholders) {
  std::ifstream file(harness::source_dir() / "packaging/switchboard.toml.example");
  std::stringstream buffer;
  buffer << file.rdbuf();
  EXPECT_THROW(sb::config::parse_config(buffer.str(), kHome), ConfigError);
}

}  // namespace
}  // namespace sb::config::test
