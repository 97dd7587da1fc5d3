#include "supervisor/metrics/exposition.hpp"

#include <charconv>
#include <cmath>
#include <initializer_list>
#include <span>
#include <utility>
#include <vector>

namespace sb::supervisor {
namespace {

using Label = std::pair<std::string_view, std::string_view>;

std::string number_text(double value) {
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (std::isnan(value)) return "NaN";
  char buffer[32];
  const auto written = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, written.ptr);
}

// Writes families one after another; a family's samples follow its HELP and TYPE.
class Writer {
 public:
  void family(std::string_view name, std::string_view type, std::string_view help) {
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    out_ += help;
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
  }

  void sample(std::string_view name, std::span<const Label> labels, double value) {
    out_ += name;
    char separator = '{';
    for (const auto& [label, label_value] : labels) {
      out_ += separator;
      out_ += label;
      out_ += "=\"";
      append_escaped(label_value);
      out_ += '"';
      separator = ',';
    }
    if (!labels.empty()) out_ += '}';
    out_ += ' ';
    out_ += number_text(value);
    out_ += '\n';
  }
  void sample(std::string_view name, std::initializer_list<Label> labels, double value) {
    sample(name, std::span<const Label>(labels.begin(), labels.size()), value);
  }

  // Cumulative buckets, then _sum and _count, for the series `labels` of a histogram.
  void histogram(std::string_view name, std::vector<Label> labels, const Histogram& histogram,
                 std::span<const double> bounds) {
    const std::string bucket = std::string(name) + "_bucket";
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i <= bounds.size(); ++i) {
      cumulative += i < histogram.counts.size() ? histogram.counts[i] : 0;
      const std::string le = i < bounds.size() ? number_text(bounds[i]) : "+Inf";
      labels.emplace_back("le", le);
      sample(bucket, labels, static_cast<double>(cumulative));
      labels.pop_back();
    }
    sample(std::string(name) + "_sum", labels, histogram.sum);
    sample(std::string(name) + "_count", labels, static_cast<double>(histogram.count));
  }

  std::string take() { return std::move(out_); }

 private:
  void append_escaped(std::string_view value) {
    for (const char c : value) {
      if (c == '\\') {
        out_ += "\\\\";
      } else if (c == '"') {
        out_ += "\\\"";
      } else if (c == '\n') {
        out_ += "\\n";
      } else {
        out_ += c;
      }
    }
  }

  std::string out_;
};

double flag(bool value) {
  return value ? 1 : 0;
}

template <class Key>
void string_counts(Writer& out, std::string_view name, std::string_view label,
                   const Metrics::Counts<Key>& counts) {
  for (const auto& [key, value] : counts)
    out.sample(name, {{label, key}}, static_cast<double>(value));
}

// One sample for each of `values`, 0 for one never counted: a family whose every series is
// there from the start.
void every_count(Writer& out, std::string_view name, std::string_view label,
                 std::initializer_list<std::string_view> values,
                 const Metrics::Counts<std::string>& counts) {
  for (const std::string_view value : values) {
    const auto found = counts.find(value);
    out.sample(name, {{label, value}},
               static_cast<double>(found == counts.end() ? 0 : found->second));
  }
}

void call_families(Writer& out, const Metrics& metrics) {
  out.family("switchboard_calls_total", "counter",
             "Tool calls that ended, by computer, caller and outcome.");
  for (const auto& [key, value] : metrics.calls()) {
    out.sample("switchboard_calls_total",
               {{"computer", key[0]}, {"client", key[1]}, {"outcome", key[2]}},
               static_cast<double>(value));
  }
  out.family("switchboard_call_duration_seconds", "histogram",
             "Tool call duration from the caller's request to the end of the call.");
  for (const auto& [key, histogram] : metrics.durations()) {
    out.histogram("switchboard_call_duration_seconds", {{"computer", key[0]}, {"tool", key[1]}},
                  histogram, kDurationBounds);
  }
  out.family("switchboard_reply_bytes", "histogram", "Size of computers' replies to tool calls.");
  for (const auto& [computer, histogram] : metrics.reply_sizes()) {
    out.histogram("switchboard_reply_bytes", {{"computer", computer}}, histogram,
                  kReplyBytesBounds);
  }
  out.family("switchboard_caller_calls_in_flight", "gauge",
             "Tool calls in flight, by computer and caller.");
  for (const auto& [key, value] : metrics.callers_in_flight()) {
    out.sample("switchboard_caller_calls_in_flight", {{"computer", key[0]}, {"client", key[1]}},
               static_cast<double>(value));
  }
}

void computer_families(Writer& out, const std::vector<WorkerRow>& rows) {
  const auto each = [&](std::string_view name, std::string_view type, std::string_view help,
                        auto value_of) {
    out.family(name, type, help);
    for (const auto& row : rows)
      out.sample(name, {{"computer", row.computer}}, static_cast<double>(value_of(row)));
  };
  each("switchboard_computer_calls_in_flight", "gauge",
       "Requests in flight to the computer, as its worker's status record says.",
       [](const WorkerRow& row) { return row.in_flight; });
  each("switchboard_computer_max_in_flight", "gauge", "The computer's in-flight cap.",
       [](const WorkerRow& row) { return row.max_in_flight; });
  each("switchboard_computer_attached", "gauge", "1 while a socket holds the computer's slot.",
       [](const WorkerRow& row) { return flag(row.attached); });
  each("switchboard_computer_ready", "gauge",
       "1 while the computer can be called: attached, initialized, its worker responsive.",
       [](const WorkerRow& row) { return flag(row.state == "ready"); });
  each("switchboard_computer_attached_seconds", "gauge",
       "Seconds since the computer's socket attached (0 when not attached).",
       [](const WorkerRow& row) { return std::max<std::int64_t>(row.attached_for_secs, 0); });
  each("switchboard_computer_attaches_total", "counter",
       "Sessions of the computer that attached (reported by its worker).",
       [](const WorkerRow& row) { return row.attaches; });
  out.family("switchboard_computer_detaches_total", "counter",
             "Sessions of the computer that ended, by WebSocket close code.");
  for (const auto& row : rows) {
    for (const auto& [code, count] : row.detaches) {
      out.sample("switchboard_computer_detaches_total",
                 {{"computer", row.computer}, {"code", code}}, static_cast<double>(count));
    }
  }
  each("switchboard_worker_restarts_total", "counter", "Times the computer's worker was restarted.",
       [](const WorkerRow& row) { return row.restarts; });
  each("switchboard_worker_stalls_total", "counter",
       "Times the computer's worker stopped beating long enough to be reported stalled.",
       [](const WorkerRow& row) { return row.stalls; });
  each("switchboard_worker_stalled", "gauge", "1 while the computer's worker is stalled.",
       [](const WorkerRow& row) { return flag(row.state == "stalled"); });
  each("switchboard_worker_resident_bytes", "gauge", "Resident memory of the computer's worker.",
       [](const WorkerRow& row) { return row.resident_kib * 1024; });
}

// Dropped in the worker (its status record's count) or in the supervisor (a task status
// for a client with no call open).
void dropped_family(Writer& out, const ScrapeSources& sources) {
  out.family("switchboard_notifications_dropped_total", "counter",
             "Messages from the computer that no caller could take.");
  const auto& in_supervisor = sources.metrics.notifications_dropped();
  for (const auto& row : sources.workers) {
    const auto found = in_supervisor.find(row.computer);
    const std::uint64_t dropped =
        row.messages_dropped + (found == in_supervisor.end() ? 0 : found->second);
    out.sample("switchboard_notifications_dropped_total", {{"computer", row.computer}},
               static_cast<double>(dropped));
  }
}

void supervisor_families(Writer& out, const ScrapeSources& sources) {
  const Metrics& metrics = sources.metrics;
  out.family("switchboard_auth_failures_total", "counter",
             "Refused credentials, by kind: computer (an attach) or client (a caller's token).");
  string_counts(out, "switchboard_auth_failures_total", "kind", metrics.auth_failures());
  out.family("switchboard_reloads_total", "counter", "Config reloads, by result.");
  string_counts(out, "switchboard_reloads_total", "result", metrics.reloads());
  out.family("switchboard_pod_dials_total", "counter",
             "Dials of [[pty_attach]] pods, by attach name and outcome.");
  for (const auto& [key, value] : metrics.pod_dials()) {
    out.sample("switchboard_pod_dials_total", {{"pod", key[0]}, {"outcome", key[1]}},
               static_cast<double>(value));
  }
  out.family("switchboard_progress_routed_total", "counter",
             "Progress notifications relayed from the computer to a caller.");
  string_counts(out, "switchboard_progress_routed_total", "computer", metrics.progress_routed());
  out.family("switchboard_http_connections_open", "gauge", "HTTP connections open.");
  out.sample("switchboard_http_connections_open", {},
             static_cast<double>(sources.connections_open));
  out.family("switchboard_http_connections_refused_total", "counter",
             "HTTP connections closed at once: [limits] max_connections reached.");
  out.sample("switchboard_http_connections_refused_total", {},
             static_cast<double>(metrics.connections_refused()));
  out.family("switchboard_http_connections_cut_total", "counter",
             "HTTP connections reset at a deadline, by cause: write_deadline or lingering.");
  every_count(out, "switchboard_http_connections_cut_total", "cause",
              {kCutAtWriteDeadline, kCutLingering}, metrics.connections_cut());
  out.family("switchboard_trace_spans_total", "counter",
             "Spans of caller requests, by outcome: exported to the collector, or dropped (the "
             "queue full, or the collector refused them).");
  every_count(out, "switchboard_trace_spans_total", "outcome", {"exported", "dropped"},
              metrics.trace_spans());
  out.family("switchboard_audit_log_records_total", "counter",
             "Audit lines sent as OTLP log records, by outcome: exported or dropped.");
  every_count(out, "switchboard_audit_log_records_total", "outcome", {"exported", "dropped"},
              metrics.audit_log_records());
  out.family("switchboard_switches_total", "counter",
             "Switches in place (SIGUSR2, switchboard upgrade, a restart) since the service "
             "started.");
  out.sample("switchboard_switches_total", {}, static_cast<double>(metrics.switches()));
  out.family("switchboard_sessions_resumed_total", "counter",
             "Computer sessions taken up again after a switch, since the service started.");
  out.sample("switchboard_sessions_resumed_total", {},
             static_cast<double>(metrics.sessions_resumed()));
  out.family("switchboard_reply_buffer_bytes", "gauge", "Reply bytes held for callers.");
  out.sample("switchboard_reply_buffer_bytes", {}, static_cast<double>(sources.reply_buffer_bytes));
  out.family("switchboard_reply_buffer_capacity_bytes", "gauge",
             "[limits] max_reply_buffer_mib, in bytes.");
  out.sample("switchboard_reply_buffer_capacity_bytes", {},
             static_cast<double>(sources.reply_buffer_capacity));
}

}  // namespace

std::string exposition(const ScrapeSources& sources) {
  Writer out;
  call_families(out, sources.metrics);
  computer_families(out, sources.workers);
  dropped_family(out, sources);
  supervisor_families(out, sources);
  return out.take();
}

}  // namespace sb::supervisor
