// Bounded waiting on an observable condition: the only way the end-to-end tests wait.
// A condition is polled at a short interval until it holds or the deadline passes; nothing
// ever sleeps for a fixed time in the hope that something has happened meanwhile.
#pragma once

#include <chrono>
#include <thread>

namespace harness {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Generous enough for a loaded 2-core machine (and sanitizer builds), short enough that a
// broken product fails the test instead of hanging the suite.
inline constexpr std::chrono::milliseconds kDefaultWait = 10s;
inline constexpr std::chrono::milliseconds kPollInterval = 10ms;

// Polls `condition` every `interval` until it returns true or `timeout` passes; returns its
// last value. (The bench polls faster: what it times must not wait on the poll.)
template <typename Condition>
bool eventually(Condition&& condition, std::chrono::milliseconds timeout = kDefaultWait,
                std::chrono::microseconds interval = kPollInterval) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (condition()) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(interval);
  }
}

inline std::chrono::milliseconds elapsed_since(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
}

}  // namespace harness
