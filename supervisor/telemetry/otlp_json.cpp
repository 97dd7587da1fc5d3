#include "supervisor/telemetry/otlp_json.hpp"

#include "shared/json_string.hpp"
#include "shared/text.hpp"

namespace sb::supervisor {
namespace {

// Written as text, not through a tree, each item when it is queued: everything here runs on
// the supervisor's one loop, where a tree cost some 20 µs a span, and a batch of 512
// written at once held the calls arriving meanwhile for milliseconds.

template <std::size_t N>
void append_hex(std::string& out, const std::array<std::uint8_t, N>& bytes) {
  out += '"';
  out += to_hex(bytes.data(), bytes.size());
  out += '"';
}

// A number OTLP's JSON writes as a decimal string (a 64-bit one: times, intValue).
void append_quoted_number(std::string& out, std::uint64_t number) {
  out += '"';
  out += std::to_string(number);
  out += '"';
}

void append_value(std::string& out, const std::variant<std::string, std::int64_t, bool>& value) {
  if (const auto* text = std::get_if<std::string>(&value)) {
    out += R"({"stringValue":)";
    append_json_string(out, *text);
  } else if (const auto* number = std::get_if<std::int64_t>(&value)) {
    out += R"({"intValue":")";
    out += std::to_string(*number);
    out += '"';
  } else {
    out += R"({"boolValue":)";
    out += std::get<bool>(value) ? "true" : "false";
  }
  out += '}';
}

// `items` as a JSON array, each written by `append_item`.
template <typename Item, typename AppendItem>
void append_array(std::string& out, const std::vector<Item>& items, AppendItem append_item) {
  out += '[';
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ',';
    append_item(out, items[i]);
  }
  out += ']';
}

void append_attributes(std::string& out, const std::vector<SpanAttribute>& attributes) {
  append_array(out, attributes, [](std::string& to, const SpanAttribute& attribute) {
    to += R"({"key":)";
    append_json_string(to, attribute.key);
    to += R"(,"value":)";
    append_value(to, attribute.value);
    to += '}';
  });
}

void append_span(std::string& out, const Span& span) {
  out += R"({"traceId":)";
  append_hex(out, span.trace_id);
  out += R"(,"spanId":)";
  append_hex(out, span.span_id);
  if (span.parent_id) {
    out += R"(,"parentSpanId":)";
    append_hex(out, *span.parent_id);
  }
  if (!span.tracestate.empty()) {
    out += R"(,"traceState":)";
    append_json_string(out, span.tracestate);
  }
  out += R"(,"name":)";
  append_json_string(out, span.name);
  out += R"(,"kind":)";
  out += std::to_string(static_cast<int>(span.kind));
  out += R"(,"startTimeUnixNano":)";
  append_quoted_number(out, span.start_unix_nanos);
  out += R"(,"endTimeUnixNano":)";
  append_quoted_number(out, span.end_unix_nanos);
  out += R"(,"attributes":)";
  append_attributes(out, span.attributes);
  if (!span.events.empty()) {
    out += R"(,"events":)";
    append_array(out, span.events, [](std::string& to, const SpanEvent& event) {
      to += R"({"name":)";
      append_json_string(to, event.name);
      to += R"(,"timeUnixNano":)";
      append_quoted_number(to, event.time_unix_nanos);
      to += '}';
    });
  }
  if (span.error) {
    out += R"(,"status":{"code":2,"message":)";
    append_json_string(out, span.status_message);
    out += '}';
  }
  out += '}';
}

void append_record(std::string& out, const LogRecord& record) {
  out += R"({"timeUnixNano":)";
  append_quoted_number(out, record.time_unix_nanos);
  out += R"(,"observedTimeUnixNano":)";
  append_quoted_number(out, record.time_unix_nanos);
  out += R"(,"severityNumber":9,"severityText":"INFO","body":{"stringValue":)";
  append_json_string(out, record.body);
  out += R"(},"attributes":)";
  append_attributes(out, {{"event.name", record.event}});
  if (!record.trace_id.empty()) {
    out += R"(,"traceId":)";
    append_json_string(out, record.trace_id);
  }
  if (!record.span_id.empty()) {
    out += R"(,"spanId":)";
    append_json_string(out, record.span_id);
  }
  out += '}';
}

}  // namespace

std::string otlp_json(const Span& span) {
  std::string out;
  out.reserve(768);  // a request's span, near enough
  append_span(out, span);
  return out;
}

std::string otlp_json(const LogRecord& record) {
  std::string out;
  out.reserve(256 + record.body.size());
  append_record(out, record);
  return out;
}

std::string otlp_request(OtlpSignal signal, const std::vector<std::string>& items,
                         const TraceResource& resource) {
  const bool traces = signal == OtlpSignal::kTraces;
  std::size_t size = 512;
  for (const auto& item : items) size += item.size() + 1;
  std::string out;
  out.reserve(size);
  out += traces ? R"({"resourceSpans":[{"resource":{"attributes":)"
                : R"({"resourceLogs":[{"resource":{"attributes":)";
  append_attributes(out, {{"service.name", std::string("switchboard")},
                          {"service.version", resource.service_version},
                          {"service.instance.id", resource.service_instance}});
  out += traces ? R"(},"scopeSpans":[{"scope":{"name":"switchboard"},"spans":)"
                : R"(},"scopeLogs":[{"scope":{"name":"switchboard"},"logRecords":)";
  append_array(out, items, [](std::string& to, const std::string& item) { to += item; });
  out += "}]}]}";
  return out;
}

}  // namespace sb::supervisor
