// Unix time, as the switchboard writes "when" wherever it leaves the process: audit lines,
// status documents, token expiry checks, carried sessions' records and spans.
#pragma once

#include <chrono>
#include <cstdint>

namespace sb {

// `at` as a count of `Unit`s since the Unix epoch.
template <typename Unit>
std::int64_t unix_time(std::chrono::system_clock::time_point at) {
  return std::chrono::duration_cast<Unit>(at.time_since_epoch()).count();
}

template <typename Unit>
std::int64_t unix_time_now() {
  return unix_time<Unit>(std::chrono::system_clock::now());
}

// What OTLP and the IPC protocol carry: nanoseconds, unsigned.
inline std::uint64_t unix_nanos_now() {
  return static_cast<std::uint64_t>(unix_time_now<std::chrono::nanoseconds>());
}

}  // namespace sb
