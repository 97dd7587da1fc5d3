#include "shared/backoff.hpp"

#include <algorithm>

namespace sb {

std::chrono::milliseconds Backoff::next(std::chrono::milliseconds lasted) {
  if (lasted >= stable_) current_ = first_;
  const std::chrono::milliseconds wait = current_;
  current_ = std::min(current_ * 2, max_);
  return wait;
}

std::chrono::milliseconds jittered(std::chrono::milliseconds wait, double r) {
  r = std::clamp(r, 0.0, 1.0);
  return std::chrono::milliseconds(static_cast<std::chrono::milliseconds::rep>(
      static_cast<double>(wait.count()) * (0.8 + 0.4 * r)));
}

}  // namespace sb
