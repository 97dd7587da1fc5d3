// What a scrape renders is strict exposition format with the labels escaped
// (docs/metrics.md).
#include <gtest/gtest.h>

#include "harness/exposition.hpp"
#include "supervisor/metrics/exposition.hpp"

namespace sb::supervisor {
namespace {

using namespace std::chrono_literals;

TEST(MetricsExposition, RendersStrictFormatWithEscapedLabels) {
  Metrics metrics;
  const std::string odd = "we\"ird\\name\nhere";
  metrics.call_started(odd, "alice");
  metrics.call_ended(CallEnd{.computer = odd,
                             .caller = "alice",
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

}  // namespace
}  // namespace sb::supervisor
