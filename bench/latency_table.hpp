// Latencies as the bench's tables show them: percentiles of round trips in microseconds, and
// the rows that compare two paths.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sbbench {

struct Latency {
  double p50 = 0, p99 = 0, p999 = 0, mean = 0, min = 0;
  std::size_t samples = 0;
};

Latency latency_of(std::vector<std::int64_t> ns);

// Tables of latencies: the header, then rows over its columns for one latency, the
// difference of two, their ratio.
std::string latency_header();
std::string latency_row(const std::string& name, const Latency& l);
std::string difference_row(const std::string& name, const Latency& a, const Latency& b);
std::string ratio_row(const std::string& name, const Latency& a, const Latency& b);

}  // namespace sbbench
