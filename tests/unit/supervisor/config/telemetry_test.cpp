// [telemetry] (docs/observability.md, "Configuration"): where spans go and how many, each
// mistake refused with what is wrong.
#include <gtest/gtest.h>

#include <string>

#include "supervisor/config/config.hpp"
#include "tests/unit/supervisor/config/config_test_support.hpp"

namespace sb::config::test {
namespace {

const std::string kBase =
    kMacmini + client("alice", "@T1@", "computers = { macmini = [\"echo\"] }");

TEST(ConfigTelemetry, OffUnlessConfiguredAndDefaultsOtherwise) {
  EXPECT_FALSE(parse(kBase).telemetry);
  const Config config = parse(kBase + "[telemetry]\nendpoint = \"https://otel.example.net/\"\n");
  ASSERT_TRUE(config.telemetry);
  EXPECT_EQ(config.telemetry->endpoint, "https://otel.example.net");
  EXPECT_TRUE(config.telemetry->headers_file.empty());
  EXPECT_EQ(config.telemetry->sample_ratio, 1.0);
  EXPECT_EQ(config.telemetry->max_sampled_per_sec, 100);
  EXPECT_EQ(config.telemetry->batch_delay, std::chrono::milliseconds(1000));
  EXPECT_EQ(config.telemetry->max_queue_spans, 2048);
  EXPECT_FALSE(config.telemetry->audit_logs);
}

TEST(ConfigTelemetry, EveryKeyIsRead) {
  const Config config = parse(kBase + R"([telemetry]
endpoint = "http://127.0.0.1:4318"
headers_file = "~/otlp-headers"
sample_ratio = 0.25
max_sampled_per_sec = 7
batch_delay_ms = 50
max_queue_spans = 9
audit_logs = true
)");
  ASSERT_TRUE(config.telemetry);
  EXPECT_EQ(config.telemetry->endpoint, "http://127.0.0.1:4318");
  EXPECT_EQ(config.telemetry->headers_file, "/home/u/otlp-headers");
  EXPECT_EQ(config.telemetry->sample_ratio, 0.25);
  EXPECT_EQ(config.telemetry->max_sampled_per_sec, 7);
  EXPECT_EQ(config.telemetry->batch_delay, std::chrono::milliseconds(50));
  EXPECT_EQ(config.telemetry->max_queue_spans, 9);
  EXPECT_TRUE(config.telemetry->audit_logs);
  EXPECT_EQ(parse(kBase + "[telemetry]\nendpoint = \"http://[::1]:4318\"\nsample_ratio = 0\n")
                .telemetry->sample_ratio,
            0.0);
}

TEST(ConfigTelemetry, MistakesAreRefusedWithWhatIsWrong) {
  const auto error = [&](const std::string& block) {
    return error_of(kBase + "[telemetry]\n" + block);
  };
  EXPECT_TRUE(Contains(error(""), "missing required key `endpoint`"));
  EXPECT_TRUE(Contains(error("endpoint = \"http://otel.example.net\"\n"),
                       "is not an https:// URL (http:// only to 127.0.0.1"));
  EXPECT_TRUE(Contains(error("endpoint = \"https://otel.example.net/?key=1\"\n"),
                       "needs a host, and no query or fragment"));
  const std::string endpoint = "endpoint = \"https://otel.example.net\"\n";
  EXPECT_TRUE(
      Contains(error(endpoint + "sample_ratio = 1.5\n"), "`sample_ratio` must be between 0 and 1"));
  EXPECT_TRUE(Contains(error(endpoint + "sample_ratio = \"all\"\n"), "a number"));
  EXPECT_TRUE(
      Contains(error(endpoint + "batch_delay_ms = 1\n"), "`batch_delay_ms` must be between 10"));
  EXPECT_TRUE(
      Contains(error(endpoint + "max_queue_spans = 0\n"), "`max_queue_spans` must be between 1"));
  EXPECT_TRUE(Contains(error(endpoint + "max_sampled_per_sec = -1\n"),
                       "`max_sampled_per_sec` must be between 0"));
  EXPECT_TRUE(Contains(error(endpoint + "api_key = \"x\"\n"), "unknown key `api_key`"));
}

}  // namespace
}  // namespace sb::config::test
