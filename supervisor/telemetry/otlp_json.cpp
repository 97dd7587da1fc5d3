#include "supervisor/telemetry/otlp_json.hpp"

#include "shared/json_string.hpp"
#include "shared/text.hpp"

namespace sb::supervisor {
namespace {

// Written as text, not through a tree: an export of hundreds of spans is written on the
// supervisor's one loop, and a tree of them cost it some 20 µs a span.

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

void append_attributes(std::string& out, const std::vector<SpanAttribute>& attributes) {
  out += '[';
  for (std::size_t i = 0; i < attributes.size(); ++i) {
    if (i > 0) out += ',';
    out += R"({"key":)";
    append_json_string(out, attributes[i].key);
    out += R"(,"value":)";
    append_value(out, attributes[i].value);
    out += '}';
  }
  out += ']';
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
    out += R"(,"events":[)";
    for (std::size_t i = 0; i < span.events.size(); ++i) {
      if (i > 0) out += ',';
      out += R"({"name":)";
      append_json_string(out, span.events[i].name);
      out += R"(,"timeUnixNano":)";
      append_quoted_number(out, span.events[i].time_unix_nanos);
      out += '}';
    }
    out += ']';
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

// The names an OTLP export's envelope gives its lists: of resources, of scopes, of items.
struct Envelope {
  std::string_view resources;
  std::string_view scopes;
  std::string_view items;
};

// `items` as the one scope "switchboard" of the one resource this process is.
template <typename Item>
std::string enveloped(const Envelope& names, const std::vector<Item>& items,
                      const TraceResource& resource) {
  constexpr std::size_t kBytesPerItem = 768;  // a request's span, near enough
  std::string out;
  out.reserve(512 + items.size() * kBytesPerItem);
  out += R"({")";
  out += names.resources;
  out += R"(":[{"resource":{"attributes":)";
  append_attributes(out, {{"service.name", std::string("switchboard")},
                          {"service.version", resource.service_version},
                          {"service.instance.id", resource.service_instance}});
  out += R"(},")";
  out += names.scopes;
  out += R"(":[{"scope":{"name":"switchboard"},")";
  out += names.items;
  out += R"(":[)";
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ',';
    if constexpr (std::is_same_v<Item, Span>) {
      append_span(out, items[i]);
    } else {
      append_record(out, items[i]);
    }
  }
  out += "]}]}]}";
  return out;
}

}  // namespace

std::string encode_otlp_traces(const std::vector<Span>& spans, const TraceResource& resource) {
  return enveloped({"resourceSpans", "scopeSpans", "spans"}, spans, resource);
}

std::string encode_otlp_logs(const std::vector<LogRecord>& records, const TraceResource& resource) {
  return enveloped({"resourceLogs", "scopeLogs", "logRecords"}, records, resource);
}

}  // namespace sb::supervisor
