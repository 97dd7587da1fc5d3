// The switchboard's spans of its callers' requests (docs/observability.md, "Spans"): one
// server span per request that got past authentication, the child of the caller's span
// when its trace context read, sampled by `Sampler` and handed to the exporter when it
// ends. A `RequestSpan` that is never ended (its request abandoned) ends as it goes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "supervisor/config/config.hpp"
#include "supervisor/telemetry/otlp_exporter.hpp"
#include "supervisor/telemetry/sampler.hpp"

namespace sb::supervisor {

// A span's name and each text attribute are cut to this many bytes (an id or a tool's name
// is the caller's, and spans wait in a queue).
inline constexpr std::size_t kMaxSpanTextBytes = 256;
inline constexpr std::size_t kMaxSpanEvents = 32;

class RequestSpan {
 public:
  // `hop` and `round_trip`: the ids of its children (the worker's hop, the computer's
  // round trip under it).
  RequestSpan(Span span, SpanId hop, SpanId round_trip, bool sampled,
              std::weak_ptr<SpanExporter> exporter);
  ~RequestSpan();
  RequestSpan(const RequestSpan&) = delete;
  RequestSpan& operator=(const RequestSpan&) = delete;

  // The ids the audit line of its call carries: the trace's and this span's, in hex.
  std::string trace_id_hex() const;
  std::string span_id_hex() const;
  // What the computer receives: the span of its round trip (a child of this one's) as its
  // parent, with the sampling decision.
  std::string traceparent() const;
  const std::string& tracestate() const { return span_.tracestate; }

  void set(std::string key, std::variant<std::string, std::int64_t, bool> value);
  // A message went to the caller during the call (progress, the computer's request): an
  // event, at most kMaxSpanEvents, on the computer's round trip when there is one, else on
  // this span.
  void message_to_caller();
  // The request's answer: its HTTP status (none over a pod's socket), its code when a
  // JSON-RPC error, whether it is a tool's result that says it failed, and its way through
  // the worker to the computer, or what the switchboard did to answer it itself, which
  // become this span's children.
  void end(std::optional<int> http_status, std::optional<std::int64_t> error_code, bool tool_error,
           const RoundTrip& round_trip = {}, std::string_view local_step = {});
  // The caller went away before its answer; `forwarded`: when its request was handed to its
  // worker (Unix nanoseconds), 0 if it never was.
  void end_abandoned(std::uint64_t forwarded = 0);

 private:
  void finish(const RoundTrip& round_trip, std::string_view local_step = {});
  Span round_trip_span(const RoundTrip& round_trip, std::uint64_t from, std::uint64_t to);
  std::vector<SpanAttribute> round_trip_attributes() const;

  Span span_;
  SpanId hop_id_;
  SpanId round_trip_id_;
  bool sampled_;
  std::weak_ptr<SpanExporter> exporter_;
  bool ended_ = false;
};

class Tracer {
 public:
  // The exporters started (`logs` none unless the audit goes as logs too); the tracer stops
  // them when it goes.
  Tracer(config::Telemetry telemetry, std::shared_ptr<SpanExporter> exporter,
         std::shared_ptr<LogExporter> logs = nullptr);
  ~Tracer();
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  const config::Telemetry& telemetry() const { return telemetry_; }
  // A server span named `name`, the child of `parent` when there is one, else a new trace.
  std::shared_ptr<RequestSpan> start(const std::optional<TraceContext>& parent, std::string name);
  // An audit line as a log record, when `[telemetry] audit_logs` is on.
  void log(LogRecord record);

 private:
  config::Telemetry telemetry_;
  Sampler sampler_;
  TraceIds ids_;
  std::shared_ptr<SpanExporter> exporter_;
  std::shared_ptr<LogExporter> logs_;
};

}  // namespace sb::supervisor
