#include "supervisor/telemetry/tracer.hpp"

#include <chrono>

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

std::uint64_t unix_nanos_now() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count());
}

}  // namespace

RequestSpan::RequestSpan(Span span, bool sampled, std::weak_ptr<SpanExporter> exporter)
    : span_(std::move(span)), sampled_(sampled), exporter_(std::move(exporter)) {}

RequestSpan::~RequestSpan() {
  if (!ended_) end_abandoned();
}

std::string RequestSpan::traceparent() const {
  return render_traceparent(span_.trace_id, span_.span_id, sampled_);
}

void RequestSpan::set(std::string key, std::variant<std::string, std::int64_t, bool> value) {
  if (auto* text = std::get_if<std::string>(&value)) *text = bounded(std::move(*text));
  span_.attributes.push_back({std::move(key), std::move(value)});
}

void RequestSpan::end(int http_status, std::optional<std::int64_t> error_code, bool tool_error) {
  if (ended_) return;
  set("http.response.status_code", std::int64_t{http_status});
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
  } else if (http_status >= 500) {
    span_.error = true;
    set("error.type", std::to_string(http_status));
  }
  finish();
}

void RequestSpan::end_abandoned() {
  if (ended_) return;
  span_.error = true;
  span_.status_message = "the caller went away before its answer";
  set("error.type", std::string("abandoned"));
  finish();
}

void RequestSpan::finish() {
  ended_ = true;
  span_.end_unix_nanos = unix_nanos_now();
  if (!sampled_) return;
  if (const auto exporter = exporter_.lock()) exporter->add(std::move(span_));
}

Tracer::Tracer(config::Telemetry telemetry, std::shared_ptr<SpanExporter> exporter)
    : telemetry_(std::move(telemetry)),
      sampler_(telemetry_.sample_ratio, telemetry_.max_sampled_per_sec),
      exporter_(std::move(exporter)) {}

Tracer::~Tracer() {
  exporter_->stop();
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
  return std::make_shared<RequestSpan>(std::move(span), sampled, exporter_);
}

}  // namespace sb::supervisor
