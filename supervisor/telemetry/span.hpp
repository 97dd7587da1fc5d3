// One finished span as the switchboard exports it (docs/observability.md, "Spans"): plain
// data, written by the request path and encoded by otlp_json.hpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "supervisor/telemetry/trace_context.hpp"

namespace sb::supervisor {

// OTLP's span kinds that the switchboard makes.
enum class SpanKind { kInternal = 1, kServer = 2, kClient = 3 };

struct SpanAttribute {
  std::string key;
  std::variant<std::string, std::int64_t, bool> value;
};

struct SpanEvent {
  std::string name;
  std::uint64_t time_unix_nanos = 0;
};

struct Span {
  TraceId trace_id{};
  SpanId span_id{};
  std::optional<SpanId> parent_id;  // none: the trace's root
  std::string tracestate;           // as the caller sent it, when it read
  std::string name;
  SpanKind kind = SpanKind::kServer;
  std::uint64_t start_unix_nanos = 0;
  std::uint64_t end_unix_nanos = 0;
  std::vector<SpanAttribute> attributes;
  std::vector<SpanEvent> events;
  bool error = false;  // OTLP status ERROR; otherwise UNSET
  std::string status_message;
};

// What the process says of itself on every export: service.name, service.version and
// service.instance.id.
struct TraceResource {
  std::string service_version;
  std::string service_instance;
};

}  // namespace sb::supervisor
