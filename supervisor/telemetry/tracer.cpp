#include "supervisor/telemetry/tracer.hpp"

#include <algorithm>

#include "base/unix_time.hpp"
#include "shared/text.hpp"

namespace sb::supervisor {
namespace {

// Parse error, invalid request, method not found, invalid params, resource not found.
bool callers_fault(std::int64_t code) {
  return code == -32700 || code == -32600 || code == -32601 || code == -32602 || code == -32002;
}

std::string bounded(std::string text) {
  if (text.size() > kMaxSpanTextBytes) text.resize(kMaxSpanTextBytes);
  return text;
}

// `at` within [from, to] (the worker's word kept within what the supervisor saw).
std::uint64_t within(std::uint64_t at, std::uint64_t from, std::uint64_t to) {
  return std::clamp(at, from, std::max(from, to));
}

}  // namespace

RequestSpan::RequestSpan(Span span, SpanId hop, SpanId round_trip, bool sampled,
                         std::weak_ptr<SpanExporter> exporter)
    : span_(std::move(span)),
      hop_id_(hop),
      round_trip_id_(round_trip),
      sampled_(sampled),
      exporter_(std::move(exporter)) {}

RequestSpan::~RequestSpan() {
  if (!ended_) end_abandoned();
}

std::string RequestSpan::trace_id_hex() const {
  return to_hex(span_.trace_id.data(), span_.trace_id.size());
}

std::string RequestSpan::span_id_hex() const {
  return to_hex(span_.span_id.data(), span_.span_id.size());
}

std::string RequestSpan::traceparent() const {
  return render_traceparent(span_.trace_id, round_trip_id_, sampled_);
}

// What the round trip's span says of the request: its method, tool and computer.
std::vector<SpanAttribute> RequestSpan::round_trip_attributes() const {
  std::vector<SpanAttribute> kept;
  for (const auto& attribute : span_.attributes) {
    if (attribute.key == "mcp.method.name" || attribute.key == "gen_ai.tool.name" ||
        attribute.key == "gen_ai.prompt.name" || attribute.key == "switchboard.computer")
      kept.push_back(attribute);
  }
  return kept;
}

void RequestSpan::message_to_caller() {
  if (ended_ || span_.events.size() >= kMaxSpanEvents) return;
  span_.events.push_back({"message to the caller", unix_nanos_now()});
}

void RequestSpan::set(std::string key, std::variant<std::string, std::int64_t, bool> value) {
  if (auto* text = std::get_if<std::string>(&value)) *text = bounded(std::move(*text));
  span_.attributes.push_back({std::move(key), std::move(value)});
}

void RequestSpan::end(std::optional<int> http_status, std::optional<std::int64_t> error_code,
                      bool tool_error, const RoundTrip& round_trip, std::string_view local_step) {
  if (ended_) return;
  if (http_status) set("http.response.status_code", std::int64_t{*http_status});
  if (error_code) {
    // The request's own fault is not the server's (OpenTelemetry's RPC and MCP conventions):
    // recorded, but the span's status stays unset.
    span_.error = !callers_fault(*error_code);
    if (span_.error) span_.status_message = "JSON-RPC error " + std::to_string(*error_code);
    set("error.type", std::to_string(*error_code));
    set("rpc.response.status_code", std::to_string(*error_code));
  } else if (tool_error) {
    span_.error = true;
    span_.status_message = "the tool's result says it failed";
    set("error.type", std::string("tool_error"));
  } else if (http_status && *http_status >= 500) {
    span_.error = true;
    set("error.type", std::to_string(*http_status));
  }
  finish(round_trip, local_step);
}

void RequestSpan::end_abandoned(std::uint64_t forwarded) {
  if (ended_) return;
  span_.error = true;
  span_.status_message = "the caller went away before its answer";
  set("error.type", std::string(round_trip_error::kAbandoned));
  finish(forwarded == 0 ? RoundTrip{}
                        : RoundTrip{.forwarded = forwarded,
                                    .returned = unix_nanos_now(),
                                    .error_type = round_trip_error::kAbandoned});
}

// The computer's round trip, from the request written to the reply read (or to when the
// switchboard stopped waiting, when the worker did not say: the request was sent by then,
// or about to be), within the worker's hop [from, to]: the mark of its reply's first byte,
// the messages to the caller while it ran, and how it ended without an answer.
Span RequestSpan::round_trip_span(const RoundTrip& round_trip, std::uint64_t from,
                                  std::uint64_t to) {
  const std::uint64_t sent = within(round_trip.sent == 0 ? from : round_trip.sent, from, to);
  const std::uint64_t replied = within(round_trip.replied == 0 ? to : round_trip.replied, sent, to);
  Span span{.trace_id = span_.trace_id,
            .span_id = round_trip_id_,
            .parent_id = hop_id_,
            .name = span_.name,
            .kind = SpanKind::kClient,
            .start_unix_nanos = sent,
            .end_unix_nanos = replied,
            .attributes = round_trip_attributes(),
            .events = std::move(span_.events)};
  span_.events.clear();
  if (round_trip.first_byte != 0)
    span.events.push_back(
        {"first byte of the reply", within(round_trip.first_byte, sent, replied)});
  if (!round_trip.error_type.empty()) {
    span.error = true;
    span.status_message =
        "ended without the computer's answer: " + std::string(round_trip.error_type);
    span.attributes.push_back({"error.type", std::string(round_trip.error_type)});
  }
  return span;
}

// The span, and with a forwarded request its children: the worker's hop (from the
// supervisor handing it over to the answer back) and under it the computer's round trip,
// whose id the computer was given; with one the switchboard answered itself, a child named
// for what it did.
void RequestSpan::finish(const RoundTrip& round_trip, std::string_view local_step) {
  ended_ = true;
  span_.end_unix_nanos = unix_nanos_now();
  if (!sampled_) return;
  const auto exporter = exporter_.lock();
  if (!exporter) return;
  if (!local_step.empty() && round_trip.forwarded == 0) {
    exporter->add(Span{.trace_id = span_.trace_id,
                       .span_id = hop_id_,
                       .parent_id = span_.span_id,
                       .name = "switchboard " + std::string(local_step),
                       .kind = SpanKind::kInternal,
                       .start_unix_nanos = span_.start_unix_nanos,
                       .end_unix_nanos = span_.end_unix_nanos});
  }
  if (round_trip.forwarded != 0) {
    const std::uint64_t from =
        within(round_trip.forwarded, span_.start_unix_nanos, span_.end_unix_nanos);
    const std::uint64_t to = within(round_trip.returned, from, span_.end_unix_nanos);
    Span hop{.trace_id = span_.trace_id,
             .span_id = hop_id_,
             .parent_id = span_.span_id,
             .name = "switchboard worker",
             .kind = SpanKind::kInternal,
             .start_unix_nanos = from,
             .end_unix_nanos = to};
    if (round_trip.sent != 0 || !round_trip.error_type.empty())
      exporter->add(round_trip_span(round_trip, from, to));
    exporter->add(std::move(hop));
  }
  exporter->add(std::move(span_));
}

Tracer::Tracer(config::Telemetry telemetry, std::shared_ptr<SpanExporter> exporter,
               std::shared_ptr<LogExporter> logs)
    : telemetry_(std::move(telemetry)),
      sampler_(telemetry_.sample_ratio, telemetry_.max_sampled_per_sec),
      exporter_(std::move(exporter)),
      logs_(std::move(logs)) {}

Tracer::~Tracer() {
  exporter_->stop();
  if (logs_) logs_->stop();
}

void Tracer::log(LogRecord record) {
  if (logs_) logs_->add(std::move(record));
}

std::shared_ptr<RequestSpan> Tracer::start(const std::optional<TraceContext>& parent,
                                           std::string name) {
  Span span{.trace_id = parent ? parent->trace_id : ids_.next_trace(),
            .span_id = ids_.next_span(),
            .name = bounded(std::move(name)),
            .kind = SpanKind::kServer,
            .start_unix_nanos = unix_nanos_now()};
  if (parent) {
    span.parent_id = parent->parent_id;
    span.tracestate = parent->tracestate;
  }
  const bool sampled = sampler_.sample(parent, std::chrono::steady_clock::now());
  const SpanId hop = ids_.next_span();
  const SpanId round_trip = ids_.next_span();
  return std::make_shared<RequestSpan>(std::move(span), hop, round_trip, sampled, exporter_);
}

}  // namespace sb::supervisor
