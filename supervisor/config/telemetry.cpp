// [telemetry]: where the switchboard's spans are exported and how many it keeps (docs/
// observability.md, "Configuration").
#include "shared/text.hpp"
#include "supervisor/config/messages.hpp"
#include "supervisor/config/rules.hpp"

namespace sb::config {
namespace {

constexpr std::int64_t kMaxSampledPerSec = 100'000;
constexpr std::int64_t kMaxBatchDelayMs = 60'000;
constexpr std::int64_t kMaxQueueSpans = 1'000'000;

int within(std::int64_t value, std::int64_t low, std::int64_t high, std::string_view key) {
  if (value < low || value > high) {
    fail("[telemetry]", "`" + std::string(key) + "` must be between " + std::to_string(low) +
                            " and " + std::to_string(high));
  }
  return static_cast<int>(value);
}

}  // namespace

void build_telemetry(const RawFile& raw, Config& config, std::string_view home) {
  if (!raw.telemetry) return;
  const RawTelemetry& block = *raw.telemetry;
  std::string endpoint = checked_outbound_url(block.endpoint, "[telemetry]", "`endpoint`");
  while (endpoint.ends_with('/')) endpoint.pop_back();
  Telemetry telemetry{.endpoint = std::move(endpoint)};
  if (block.headers_file) telemetry.headers_file = expand_home(*block.headers_file, home);
  if (block.sample_ratio) {
    if (!(*block.sample_ratio >= 0.0 && *block.sample_ratio <= 1.0))
      fail("[telemetry]", "`sample_ratio` must be between 0 and 1");
    telemetry.sample_ratio = *block.sample_ratio;
  }
  if (block.max_sampled_per_sec) {
    telemetry.max_sampled_per_sec =
        within(*block.max_sampled_per_sec, 0, kMaxSampledPerSec, "max_sampled_per_sec");
  }
  if (block.batch_delay_ms) {
    telemetry.batch_delay = std::chrono::milliseconds(
        within(*block.batch_delay_ms, 10, kMaxBatchDelayMs, "batch_delay_ms"));
  }
  if (block.max_queue_spans)
    telemetry.max_queue_spans =
        within(*block.max_queue_spans, 1, kMaxQueueSpans, "max_queue_spans");
  telemetry.audit_logs = block.audit_logs.value_or(false);
  config.telemetry = std::move(telemetry);
}

}  // namespace sb::config
