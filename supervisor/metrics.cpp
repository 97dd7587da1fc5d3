#include "supervisor/metrics.hpp"

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

namespace {

std::string text(std::string_view view) {
  return std::string(view);
}

}  // namespace

void Metrics::call_started(std::string_view computer, std::string_view client) {
  ++callers_in_flight_[{text(computer), text(client)}];
}

void Metrics::call_ended(const CallEnd& call) {
  ++calls_[{text(call.computer), text(call.client), text(call.outcome)}];
  durations_[{text(call.computer), text(call.tool)}].observe(call.duration.count(),
                                                             kDurationBounds);
  if (call.forwarded) {
    auto& in_flight = callers_in_flight_[{text(call.computer), text(call.client)}];
    if (in_flight > 0) --in_flight;
  }
  if (call.reply_bytes > 0) {
    auto found = reply_sizes_.find(call.computer);
    if (found == reply_sizes_.end())
      found = reply_sizes_.emplace(text(call.computer), Histogram{}).first;
    found->second.observe(static_cast<double>(call.reply_bytes), kReplyBytesBounds);
  }
}

namespace {

void count(Metrics::Counts<std::string>& counts, std::string_view key) {
  auto found = counts.find(key);
  if (found == counts.end()) found = counts.emplace(text(key), 0).first;
  ++found->second;
}

}  // namespace

void Metrics::auth_failure(std::string_view kind) {
  count(auth_failures_, kind);
}

void Metrics::reload(bool ok) {
  count(reloads_, ok ? "ok" : "failed");
}

void Metrics::pod_dial(std::string_view pod, std::string_view outcome) {
  ++pod_dials_[{text(pod), text(outcome)}];
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
