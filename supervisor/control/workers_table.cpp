#include "supervisor/control/workers_table.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iomanip>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/unix_time.hpp"

namespace sb::supervisor {

using json = nlohmann::json;

std::string workers_json(const std::vector<WorkerRow>& rows, const Metrics& metrics) {
  json list = json::array();
  for (const auto& row : rows) {
    list.push_back(
        {{"computer", row.computer},
         {"pid", row.pid},
         {"state", row.state},
         {"attached_for_secs",
          row.attached_for_secs >= 0 ? json(row.attached_for_secs) : json(nullptr)},
         {"in_flight", row.in_flight},
         {"max_in_flight", row.max_in_flight},
         {"restarts", row.restarts},
         {"resident_kib", row.resident_kib},
         {"sandboxed", row.sandboxed},
         {"torn_reads", row.torn_reads},
         {"build", row.build},
         {"resumed_at_ms", row.taken_up_at_ms > 0 ? json(row.taken_up_at_ms) : json(nullptr)},
         {"resumes", row.sessions_taken_up},
         {"calls", metrics.calls_of(row.computer)},
         {"duration_buckets", metrics.durations_of(row.computer).counts}});
  }
  return json{{"workers", std::move(list)}}.dump();
}

namespace {

struct Rate {
  std::string calls_per_sec = "-";
  std::string p50 = "-";
};

std::string fixed(double value, int decimals) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

// Calls/s and p50 of each computer between two answers; a computer new in the later one
// (added by a reload) or whose counts went back (renamed onto another) shows "-".
std::map<std::string, Rate> rates(const json& now, const json& earlier, double seconds) {
  std::map<std::string, const json*> before;
  for (const auto& row : earlier.at("workers"))
    before[row.at("computer").get<std::string>()] = &row;
  std::map<std::string, Rate> out;
  for (const auto& row : now.at("workers")) {
    const auto name = row.at("computer").get<std::string>();
    const auto found = before.find(name);
    if (found == before.end() || seconds <= 0) continue;
    const auto calls = row.value("calls", std::uint64_t{0});
    const auto calls_before = found->second->value("calls", std::uint64_t{0});
    const auto buckets = row.value("duration_buckets", std::vector<std::uint64_t>{});
    auto delta = found->second->value("duration_buckets", std::vector<std::uint64_t>{});
    if (calls < calls_before || delta.size() != buckets.size()) continue;
    for (std::size_t i = 0; i < delta.size(); ++i)
      delta[i] = buckets[i] >= delta[i] ? buckets[i] - delta[i] : 0;
    Rate rate{.calls_per_sec = fixed(static_cast<double>(calls - calls_before) / seconds, 1)};
    if (const auto p50 = quantile(0.5, delta, kDurationBounds))
      rate.p50 = fixed(*p50 * 1000, 1) + " ms";
    out[name] = rate;
  }
  return out;
}

// A build id is "<version>+<nonce>": the nonce tells two builds of one version apart.
std::string build_label(const std::string& build) {
  if (build.empty()) return "-";
  const auto plus = build.find('+');
  return plus == std::string::npos ? build : build.substr(plus + 1);
}

// How long ago the worker took its session up after a switch in place, if it did.
std::string taken_up_label(const json& row) {
  const auto resumed = row.find("resumed_at_ms");
  if (resumed == row.end() || !resumed->is_number_integer()) return "-";
  const auto now = unix_time_now<std::chrono::milliseconds>();
  return std::to_string(std::max<std::int64_t>(0, now - resumed->get<std::int64_t>()) / 1000) +
         "s ago";
}

std::string render(const json& document, const std::map<std::string, Rate>* rates) {
  std::ostringstream out;
  out << std::left << std::setw(20) << "COMPUTER" << std::setw(9) << "PID" << std::setw(13)
      << "STATE" << std::setw(14) << "ATTACHED" << std::setw(11) << "IN-FLIGHT";
  if (rates) out << std::setw(10) << "CALLS/S" << std::setw(11) << "P50";
  out << std::setw(10) << "RESTARTS" << std::setw(10) << "MEMORY" << std::setw(9) << "SANDBOX"
      << std::setw(14) << "BUILD"
      << "RESUMED\n";
  for (const auto& row : document.at("workers")) {
    const auto name = row.at("computer").get<std::string>();
    const std::string attached =
        row.at("attached_for_secs").is_null()
            ? "-"
            : std::to_string(row.at("attached_for_secs").get<long>()) + "s";
    const std::string in_flight = std::to_string(row.at("in_flight").get<unsigned>()) + "/" +
                                  std::to_string(row.at("max_in_flight").get<unsigned>());
    const std::string memory = std::to_string(row.at("resident_kib").get<long>() / 1024) + " MiB";
    out << std::left << std::setw(20) << name << std::setw(9) << row.at("pid").get<int>()
        << std::setw(13) << row.at("state").get<std::string>() << std::setw(14) << attached
        << std::setw(11) << in_flight;
    if (rates) {
      const auto found = rates->find(name);
      const Rate rate = found == rates->end() ? Rate{} : found->second;
      out << std::setw(10) << rate.calls_per_sec << std::setw(11) << rate.p50;
    }
    out << std::setw(10) << row.at("restarts").get<int>() << std::setw(10) << memory << std::setw(9)
        << (row.value("sandboxed", false) ? "seccomp" : "none") << std::setw(14)
        << build_label(row.value("build", std::string())) << taken_up_label(row) << "\n";
  }
  return out.str();
}

}  // namespace

std::string workers_table(const std::string& json_text) {
  return render(json::parse(json_text), nullptr);
}

std::string workers_table(const std::string& json_text, const std::string& earlier,
                          double seconds) {
  const json now = json::parse(json_text);
  const auto between =
      earlier.empty() ? std::map<std::string, Rate>{} : rates(now, json::parse(earlier), seconds);
  return render(now, &between);
}

}  // namespace sb::supervisor
