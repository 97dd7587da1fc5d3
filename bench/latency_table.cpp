#include "bench/latency_table.hpp"

#include <algorithm>

#include "bench/report.hpp"

namespace sbbench {

Latency latency_of(std::vector<std::int64_t> ns) {
  std::sort(ns.begin(), ns.end());
  Latency out;
  out.samples = ns.size();
  if (ns.empty()) return out;
  out.p50 = percentile(ns, 50) / 1000.0;
  out.p99 = percentile(ns, 99) / 1000.0;
  out.p999 = percentile(ns, 99.9) / 1000.0;
  out.mean = mean(ns) / 1000.0;
  out.min = double(ns.front()) / 1000.0;
  return out;
}

std::string latency_header() {
  return row({"path", "p50", "p99", "p99.9", "mean", "min"}) + separator(6);
}

std::string latency_row(const std::string& name, const Latency& l) {
  return row({name, fixed(l.p50, 1), fixed(l.p99, 1), fixed(l.p999, 1), fixed(l.mean, 1),
              fixed(l.min, 1)});
}

std::string difference_row(const std::string& name, const Latency& a, const Latency& b) {
  return row({name, fixed(a.p50 - b.p50, 1), fixed(a.p99 - b.p99, 1), fixed(a.p999 - b.p999, 1),
              fixed(a.mean - b.mean, 1), fixed(a.min - b.min, 1)});
}

std::string ratio_row(const std::string& name, const Latency& a, const Latency& b) {
  return row({name, ratio(a.p50, b.p50), ratio(a.p99, b.p99), ratio(a.p999, b.p999),
              ratio(a.mean, b.mean), ratio(a.min, b.min)});
}

}  // namespace sbbench
