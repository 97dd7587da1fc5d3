// Which caller requests' spans are recorded (docs/observability.md, "Sampling"): parent
// based. A trace the switchboard starts is sampled with the configured ratio; a caller's
// trace follows the caller's sampled flag, but a flag that says "sampled" is honoured at
// most `max_sampled_per_sec` times a second (a bucket that holds a second's worth), so
// that no caller can push every call into the export queue.
#pragma once

#include <chrono>
#include <optional>
#include <random>

#include "supervisor/telemetry/trace_context.hpp"

namespace sb::supervisor {

class Sampler {
 public:
  using Clock = std::chrono::steady_clock;

  Sampler(double ratio, int max_sampled_per_sec);
  bool sample(const std::optional<TraceContext>& parent, Clock::time_point now);

 private:
  double ratio_;
  double rate_;
  double allowance_;
  Clock::time_point last_{};
  std::mt19937_64 random_;
};

}  // namespace sb::supervisor
