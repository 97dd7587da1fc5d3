#include "supervisor/telemetry/otlp_json.hpp"

#include <nlohmann/json.hpp>

#include "shared/text.hpp"

namespace sb::supervisor {
namespace {

using json = nlohmann::json;

template <std::size_t N>
std::string hex_of(const std::array<std::uint8_t, N>& bytes) {
  return to_hex(bytes.data(), bytes.size());
}

json value_of(const std::variant<std::string, std::int64_t, bool>& value) {
  if (const auto* text = std::get_if<std::string>(&value)) return {{"stringValue", *text}};
  if (const auto* number = std::get_if<std::int64_t>(&value))
    return {{"intValue", std::to_string(*number)}};
  return {{"boolValue", std::get<bool>(value)}};
}

json attributes_of(const std::vector<SpanAttribute>& attributes) {
  json out = json::array();
  for (const auto& attribute : attributes)
    out.push_back({{"key", attribute.key}, {"value", value_of(attribute.value)}});
  return out;
}

json span_of(const Span& span) {
  json out{{"traceId", hex_of(span.trace_id)},
           {"spanId", hex_of(span.span_id)},
           {"name", span.name},
           {"kind", static_cast<int>(span.kind)},
           {"startTimeUnixNano", std::to_string(span.start_unix_nanos)},
           {"endTimeUnixNano", std::to_string(span.end_unix_nanos)},
           {"attributes", attributes_of(span.attributes)}};
  if (span.parent_id) out["parentSpanId"] = hex_of(*span.parent_id);
  if (!span.tracestate.empty()) out["traceState"] = span.tracestate;
  if (!span.events.empty()) {
    json events = json::array();
    for (const auto& event : span.events) {
      events.push_back(
          {{"name", event.name}, {"timeUnixNano", std::to_string(event.time_unix_nanos)}});
    }
    out["events"] = std::move(events);
  }
  if (span.error) out["status"] = {{"code", 2}, {"message", span.status_message}};
  return out;
}

json resource_of(const TraceResource& resource) {
  const std::vector<SpanAttribute> described{{"service.name", std::string("switchboard")},
                                             {"service.version", resource.service_version},
                                             {"service.instance.id", resource.service_instance}};
  return {{"attributes", attributes_of(described)}};
}

json record_of(const LogRecord& record) {
  const std::string time = std::to_string(record.time_unix_nanos);
  json out{{"timeUnixNano", time},
           {"observedTimeUnixNano", time},
           {"severityNumber", 9},
           {"severityText", "INFO"},
           {"body", {{"stringValue", record.body}}},
           {"attributes", attributes_of({{"event.name", record.event}})}};
  if (!record.trace_id.empty()) out["traceId"] = record.trace_id;
  if (!record.span_id.empty()) out["spanId"] = record.span_id;
  return out;
}

// Text that is not UTF-8 (a tool's name is the caller's) is replaced, never thrown on.
std::string dumped(const json& request) {
  return request.dump(-1, ' ', false, json::error_handler_t::replace);
}

// The names an OTLP export's envelope gives its lists: of resources, of scopes, of items.
struct Envelope {
  const char* resources;
  const char* scopes;
  const char* items;
};

// `items` as the one scope "switchboard" of the one resource this process is.
std::string enveloped(const Envelope& names, json items, const TraceResource& resource) {
  json scope{{"scope", {{"name", "switchboard"}}}, {names.items, std::move(items)}};
  json of_resource{{"resource", resource_of(resource)},
                   {names.scopes, json::array({std::move(scope)})}};
  return dumped({{names.resources, json::array({std::move(of_resource)})}});
}

}  // namespace

std::string encode_otlp_traces(const std::vector<Span>& spans, const TraceResource& resource) {
  json encoded = json::array();
  for (const auto& span : spans) encoded.push_back(span_of(span));
  return enveloped({"resourceSpans", "scopeSpans", "spans"}, std::move(encoded), resource);
}

std::string encode_otlp_logs(const std::vector<LogRecord>& records, const TraceResource& resource) {
  json encoded = json::array();
  for (const auto& record : records) encoded.push_back(record_of(record));
  return enveloped({"resourceLogs", "scopeLogs", "logRecords"}, std::move(encoded), resource);
}

}  // namespace sb::supervisor
