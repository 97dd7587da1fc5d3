// How long a dialer waits before dialling again. Every dialer of the project (the
// [[pty_attach]] dialers, the demo computer) backs off the same way (docs/protocol.md,
// "Pod redial", "Daemons"): from `first`, doubling after each attempt up to `max`, back to
// `first` after an attempt that lasted `stable` or longer. What ends a dialer or makes it
// wait apart (a refused secret) is each dialer's own rule.
#pragma once

#include <chrono>

namespace sb {

class Backoff {
 public:
  Backoff(std::chrono::milliseconds first, std::chrono::milliseconds max,
          std::chrono::milliseconds stable)
      : first_(first), max_(max), stable_(stable), current_(first) {}

  // The wait before the next attempt (before jitter), given how long the last one lasted;
  // the wait after it doubles.
  std::chrono::milliseconds next(std::chrono::milliseconds lasted);
  std::chrono::milliseconds current() const { return current_; }

 private:
  std::chrono::milliseconds first_;
  std::chrono::milliseconds max_;
  std::chrono::milliseconds stable_;
  std::chrono::milliseconds current_;
};

// wait × (0.8 + 0.4 r), r in [0, 1] (clamped): ±20 % so that dialers dropped together do
// not all dial again together.
std::chrono::milliseconds jittered(std::chrono::milliseconds wait, double r);

}  // namespace sb
