#include "supervisor/metrics/metrics.hpp"

#include <algorithm>

namespace sb::supervisor {

void Histogram::observe(double value, std::span<const double> bounds) {
  if (counts.empty()) counts.assign(bounds.size() + 1, 0);
  const auto bucket = std::lower_bound(bounds.begin(), bounds.end(), value) - bounds.begin();
  ++counts[static_cast<std::size_t>(bucket)];
  sum += value;
  ++count;
}

void Histogram::add(const Histogram& other) {
  if (counts.size() < other.counts.size()) counts.resize(other.counts.size(), 0);
  for (std::size_t i = 0; i < other.counts.size(); ++i) counts[i] += other.counts[i];
  sum += other.sum;
  count += other.count;
}

std::optional<double> quantile(double q, const std::vector<std::uint64_t>& counts,
                               std::span<const double> bounds) {
  std::uint64_t total = 0;
  for (const auto count : counts) total += count;
  if (total == 0) return std::nullopt;
  const double rank = q * static_cast<double>(total);
  double below = 0;  // observations in the buckets before this one
  for (std::size_t i = 0; i < counts.size(); ++i) {
    const double here = static_cast<double>(counts[i]);
    if (below + here >= rank && here > 0) {
      if (i >= bounds.size()) return bounds.back();
      const double lower = i == 0 ? 0 : bounds[i - 1];
      return lower + (bounds[i] - lower) * (rank - below) / here;
    }
    below += here;
  }
  return bounds.back();
}

void Metrics::call_started(std::string_view computer, std::string_view client) {
  ++callers_in_flight_[{std::string(computer), std::string(client)}];
}

void Metrics::call_ended(const CallEnd& call) {
  ++calls_[{std::string(call.computer), std::string(call.caller), std::string(call.outcome)}];
  durations_[{std::string(call.computer), std::string(call.tool)}].observe(call.duration.count(),
                                                                           kDurationBounds);
  if (call.forwarded) {
    auto& in_flight = callers_in_flight_[{std::string(call.computer), std::string(call.caller)}];
    if (in_flight > 0) --in_flight;
  }
  if (call.reply_bytes > 0) {
    auto found = reply_sizes_.find(call.computer);
    if (found == reply_sizes_.end())
      found = reply_sizes_.emplace(std::string(call.computer), Histogram{}).first;
    found->second.observe(static_cast<double>(call.reply_bytes), kReplyBytesBounds);
  }
}

namespace {

void count(Metrics::Counts<std::string>& counts, std::string_view key) {
  auto found = counts.find(key);
  if (found == counts.end()) found = counts.emplace(std::string(key), 0).first;
  ++found->second;
}

}  // namespace

void Metrics::auth_failure(std::string_view kind) {
  count(auth_failures_, kind);
}

void Metrics::connection_cut(std::string_view cause) {
  count(connections_cut_, cause);
}

void Metrics::reload(bool ok) {
  count(reloads_, ok ? "ok" : "failed");
}

void Metrics::pod_dial(std::string_view pod, std::string_view outcome) {
  ++pod_dials_[{std::string(pod), std::string(outcome)}];
}

void Metrics::progress_routed(std::string_view computer) {
  count(progress_routed_, computer);
}

void Metrics::notification_dropped(std::string_view computer) {
  count(notifications_dropped_, computer);
}

std::uint64_t Metrics::calls_of(std::string_view computer) const {
  std::uint64_t total = 0;
  for (const auto& [key, value] : calls_) {
    if (key[0] == computer) total += value;
  }
  return total;
}

Histogram Metrics::durations_of(std::string_view computer) const {
  Histogram total;
  total.counts.assign(kDurationBounds.size() + 1, 0);
  for (const auto& [key, histogram] : durations_) {
    if (key[0] == computer) total.add(histogram);
  }
  return total;
}

}  // namespace sb::supervisor
