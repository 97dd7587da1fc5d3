#include "supervisor/telemetry/sampler.hpp"

#include <algorithm>

namespace sb::supervisor {

Sampler::Sampler(double ratio, int max_sampled_per_sec)
    : ratio_(ratio),
      rate_(max_sampled_per_sec),
      allowance_(max_sampled_per_sec),
      random_(std::random_device{}()) {}

bool Sampler::sample(const std::optional<TraceContext>& parent, Clock::time_point now) {
  if (!parent) return std::uniform_real_distribution<double>(0.0, 1.0)(random_) < ratio_;
  if (!parent->sampled) return false;
  const std::chrono::duration<double> since = now - last_;
  last_ = now;
  allowance_ = std::min(rate_, allowance_ + since.count() * rate_);
  if (allowance_ < 1.0) return false;
  allowance_ -= 1.0;
  return true;
}

}  // namespace sb::supervisor
