// What the supervisor counts for /metrics, `switchboard workers` and the status page
// (docs/metrics.md): the events it sees itself, kept as plain counters and histograms.
// Figures that are a worker's (its computer's state, in flight, restarts, memory) are not
// here: they are read at scrape time from the registry and the status board, so a scrape
// never waits on a worker. Every label value is a name from the config (or one of the
// fixed words below), so the number of series is bounded by the config, whatever callers
// send. One thread updates and reads.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sb::supervisor {

// Upper bounds of the call duration histogram, in seconds (5 ms to 10 min).
inline constexpr std::array<double, 16> kDurationBounds{
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600};
// Upper bounds of the reply size histogram, in bytes (256 B to the 16 MiB message limit).
inline constexpr std::array<double, 9> kReplyBytesBounds{256,    1024,    4096,    16384,   65536,
                                                         262144, 1048576, 4194304, 16777216};

// Counts per bucket (not cumulative; the last is above every bound), their sum and total.
struct Histogram {
  std::vector<std::uint64_t> counts;
  double sum = 0;
  std::uint64_t count = 0;

  void observe(double value, std::span<const double> bounds);
  void add(const Histogram& other);
};

// The q-quantile of a histogram (counts per bucket of `bounds`, the last above them all),
// interpolated linearly within its bucket as Prometheus' histogram_quantile() does; none
// when it holds no observation. One above the last bound is that bound.
std::optional<double> quantile(double q, const std::vector<std::uint64_t>& counts,
                               std::span<const double> bounds);

// The tool label of a call: a name the caller's grant spells out, or vm_status. Any other
// name (a denied one, or one a "*" grant let through) is "other": it came from the caller.
inline constexpr std::string_view kOtherTool = "other";

// Why a caller's connection was cut with a reset: a write outlived `write_secs`, or a
// refused client went on sending past the lingering time.
inline constexpr std::string_view kCutAtWriteDeadline = "write_deadline";
inline constexpr std::string_view kCutLingering = "lingering";

struct CallEnd {
  std::string_view computer;
  std::string_view caller;  // the `client` label
  std::string_view tool;    // already a label: a granted name or kOtherTool
  std::string_view outcome;
  std::chrono::duration<double> duration{0};
  std::size_t reply_bytes = 0;
  bool forwarded = false;  // call_started() was said for it
};

class Metrics {
 public:
  using CallKey = std::array<std::string, 3>;  // computer, client, outcome
  using PairKey = std::array<std::string, 2>;  // (computer, client), (computer, tool) ...
  template <class Key>
  using Counts = std::map<Key, std::uint64_t, std::less<>>;  // transparent for strings

  // A tool call goes to a computer's worker: it is in flight for its caller until it ends.
  void call_started(std::string_view computer, std::string_view client);
  // A tool call ended, whatever the outcome (forwarded or answered by the switchboard).
  void call_ended(const CallEnd& call);
  void auth_failure(std::string_view kind);  // "computer" or "client"
  void reload(bool ok);
  void pod_dial(std::string_view pod, std::string_view outcome);
  void progress_routed(std::string_view computer);
  void notification_dropped(std::string_view computer);
  void connection_refused() { ++connections_refused_; }
  // A caller's connection reset at a deadline: "write_deadline" or "lingering".
  void connection_cut(std::string_view cause);
  // Switches in place this service has made and the sessions they carried, since it started
  // (docs/architecture.md, "Switching"): each process goes on from its predecessor's count.
  void switched(std::uint64_t switches, std::uint64_t sessions_resumed) {
    switches_ = switches;
    sessions_resumed_ = sessions_resumed;
  }
  void session_resumed() { ++sessions_resumed_; }
  // Spans handed to the collector or dropped (docs/observability.md, "Export").
  void spans(std::string_view outcome, std::uint64_t count) {
    trace_spans_[std::string(outcome)] += count;
  }
  // Audit lines sent as OTLP log records, or dropped (docs/observability.md).
  void audit_log_records(std::string_view outcome, std::uint64_t count) {
    audit_log_records_[std::string(outcome)] += count;
  }

  const Counts<CallKey>& calls() const { return calls_; }
  const std::map<PairKey, Histogram>& durations() const { return durations_; }
  const std::map<std::string, Histogram, std::less<>>& reply_sizes() const { return reply_sizes_; }
  const Counts<PairKey>& callers_in_flight() const { return callers_in_flight_; }
  const Counts<std::string>& auth_failures() const { return auth_failures_; }
  const Counts<std::string>& reloads() const { return reloads_; }
  const Counts<PairKey>& pod_dials() const { return pod_dials_; }
  const Counts<std::string>& progress_routed() const { return progress_routed_; }
  const Counts<std::string>& notifications_dropped() const { return notifications_dropped_; }
  std::uint64_t connections_refused() const { return connections_refused_; }
  const Counts<std::string>& connections_cut() const { return connections_cut_; }
  std::uint64_t switches() const { return switches_; }
  std::uint64_t sessions_resumed() const { return sessions_resumed_; }
  const Counts<std::string>& trace_spans() const { return trace_spans_; }
  const Counts<std::string>& audit_log_records() const { return audit_log_records_; }

  // One computer's calls, summed over callers and outcomes, and its duration histogram
  // summed over tools: what `switchboard workers` turns into calls/s and p50.
  std::uint64_t calls_of(std::string_view computer) const;
  Histogram durations_of(std::string_view computer) const;

 private:
  Counts<CallKey> calls_;
  std::map<PairKey, Histogram> durations_;  // computer, tool
  std::map<std::string, Histogram, std::less<>> reply_sizes_;
  Counts<PairKey> callers_in_flight_;  // computer, client
  Counts<std::string> auth_failures_;
  Counts<std::string> reloads_;
  Counts<PairKey> pod_dials_;  // pod, outcome
  Counts<std::string> progress_routed_;
  Counts<std::string> notifications_dropped_;
  std::uint64_t connections_refused_ = 0;
  Counts<std::string> connections_cut_;
  std::uint64_t switches_ = 0;
  std::uint64_t sessions_resumed_ = 0;
  Counts<std::string> trace_spans_;
  Counts<std::string> audit_log_records_;
};

}  // namespace sb::supervisor
