// Number crunching and formatting for the bench's tables: percentiles of latencies,
// fixed-precision numbers, Markdown table rows.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace sbbench {

// Nearest-rank percentile of `sorted` (ascending), in the samples' unit.
inline double percentile(const std::vector<std::int64_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * double(sorted.size())));
  return double(sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1]);
}

inline double mean(const std::vector<std::int64_t>& values) {
  if (values.empty()) return 0;
  double sum = 0;
  for (auto value : values) sum += double(value);
  return sum / double(values.size());
}

inline std::string fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

inline std::string ratio(double numerator, double denominator) {
  if (denominator <= 0) return "-";
  return fixed(numerator / denominator, 2) + "×";
}

inline std::string mib(double kib) {
  return fixed(kib / 1024.0, 1);
}

inline std::string row(const std::vector<std::string>& cells) {
  std::string line = "|";
  for (const auto& cell : cells) line += " " + cell + " |";
  return line + "\n";
}

inline std::string separator(std::size_t columns) {
  std::string line = "|";
  for (std::size_t i = 0; i < columns; ++i) line += "---|";
  return line + "\n";
}

}  // namespace sbbench
