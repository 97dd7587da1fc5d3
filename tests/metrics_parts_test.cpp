// The supervisor's metrics below the process boundary: what a scrape renders is strict
// exposition format with the labels escaped, and the quantiles `switchboard workers
// --watch` prints are Prometheus' histogram_quantile() over the same buckets.
#include <gtest/gtest.h>

#include "harness/exposition.hpp"
#include "supervisor/metrics.hpp"
#include "supervisor/metrics_exposition.hpp"
#include "supervisor/workers_table.hpp"

namespace sb::supervisor {
namespace {

using namespace std::chrono_literals;

TEST(MetricsExposition, RendersStrictFormatWithEscapedLabels) {
  Metrics metrics;
  const std::string odd = "we\"ird\\name\nhere";
  metrics.call_started(odd, "alice");
  metrics.call_ended(CallEnd{.computer = odd,
                             .client = "alice",
                             .tool = "echo",
                             .outcome = "ok",
                             .duration = 30ms,
                             .reply_bytes = 2000,
                             .forwarded = true});
  metrics.auth_failure("client");
  metrics.reload(false);
  const WorkerRow row{.computer = odd,
                      .state = "ready",
                      .attached_for_secs = 5,
                      .in_flight = 1,
                      .max_in_flight = 8,
                      .attached = true,
                      .detaches = {{"1006", 2}}};
  const std::string text = exposition(ScrapeSources{.metrics = metrics, .workers = {row}});
  const auto parsed = harness::parse_exposition(text);
  EXPECT_EQ(harness::sample_value(parsed, "switchboard_calls_total",
                                  {{"computer", odd}, {"client", "alice"}, {"outcome", "ok"}}),
            1);
  EXPECT_EQ(harness::sample_value(parsed, "switchboard_call_duration_seconds_bucket",
                                  {{"computer", odd}, {"tool", "echo"}, {"le", "0.025"}}),
            0);
  EXPECT_EQ(harness::sample_value(parsed, "switchboard_call_duration_seconds_bucket",
                                  {{"computer", odd}, {"tool", "echo"}, {"le", "0.05"}}),
            1);
  EXPECT_EQ(harness::sample_value(parsed, "switchboard_reply_bytes_bucket",
                                  {{"computer", odd}, {"le", "4096"}}),
            1);
  EXPECT_EQ(harness::sample_value(parsed, "switchboard_caller_calls_in_flight",
                                  {{"computer", odd}, {"client", "alice"}}),
            0);
  EXPECT_EQ(harness::sample_value(parsed, "switchboard_computer_ready", {{"computer", odd}}), 1);
  EXPECT_EQ(harness::sample_value(parsed, "switchboard_computer_detaches_total",
                                  {{"computer", odd}, {"code", "1006"}}),
            2);
  EXPECT_EQ(harness::sample_value(parsed, "switchboard_reloads_total", {{"result", "failed"}}), 1);
}

TEST(WorkersQuantile, InterpolatesWithinTheBucketAsPrometheusDoes) {
  const std::array<double, 3> bounds{1, 2, 4};
  // 10 in (0,1], 10 in (1,2]: the median is the top of the first bucket, p75 half-way up
  // the second.
  EXPECT_DOUBLE_EQ(*quantile(0.5, {10, 10, 0, 0}, bounds), 1);
  EXPECT_DOUBLE_EQ(*quantile(0.75, {10, 10, 0, 0}, bounds), 1.5);
  EXPECT_DOUBLE_EQ(*quantile(0.5, {0, 0, 4, 0}, bounds), 3);
  // Above every bound: the highest bound, as histogram_quantile() says.
  EXPECT_DOUBLE_EQ(*quantile(0.99, {0, 0, 0, 5}, bounds), 4);
  EXPECT_EQ(quantile(0.5, {0, 0, 0, 0}, bounds), std::nullopt);
}

TEST(WorkersTable, WatchShowsCallsPerSecondAndP50BetweenTwoAnswers) {
  Metrics metrics;
  const WorkerRow row{.computer = "alpha", .pid = 42, .state = "ready", .max_in_flight = 8};
  const std::string before = workers_json({row}, metrics);
  for (int i = 0; i < 20; ++i) {
    metrics.call_ended(
        CallEnd{.computer = "alpha", .client = "c", .tool = "t", .outcome = "ok", .duration = 3ms});
  }
  const std::string after = workers_json({row}, metrics);
  const std::string table = workers_table(after, before, 2.0);
  EXPECT_NE(table.find("CALLS/S"), std::string::npos) << table;
  EXPECT_NE(table.find("10.0"), std::string::npos) << table;    // 20 calls in 2 s
  EXPECT_NE(table.find("2.5 ms"), std::string::npos) << table;  // half of (0, 5 ms]
  // The first table of a watch has nothing to compare with.
  EXPECT_EQ(workers_table(after, "", 1.0).find("10.0"), std::string::npos);
}

}  // namespace
}  // namespace sb::supervisor
