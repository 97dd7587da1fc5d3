// One finished span as the switchboard exports it (docs/observability.md, "Spans"): plain
// data, written by the request path and encoded by otlp_json.hpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
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

// A forwarded request's way there and back (Unix nanoseconds): handed to the worker, sent
// to the computer, its answer's first and last bytes read, and the answer back in the
// supervisor (or the moment the switchboard stopped waiting for it). What its span's
// children are drawn from (docs/observability.md); all 0 for an answer that never left the
// supervisor, `sent` 0 for one the worker did not say it sent.
struct RoundTrip {
  std::uint64_t forwarded = 0;
  std::uint64_t sent = 0;
  std::uint64_t first_byte = 0;
  std::uint64_t replied = 0;
  std::uint64_t returned = 0;
  // How a round trip without its answer ended, as its span's error.type: one of the
  // constants below; empty when the computer answered, or the request never reached it.
  std::string_view error_type;
};

namespace round_trip_error {
inline constexpr std::string_view kTimeout = "timeout";            // no answer in time
inline constexpr std::string_view kDisconnected = "disconnected";  // the socket closed first
inline constexpr std::string_view kCancelled = "cancelled";        // the caller cancelled it
inline constexpr std::string_view kAbandoned = "abandoned";        // the caller went away
}  // namespace round_trip_error

// One audit line as an OTLP log record (docs/observability.md, "The audit as logs"): the
// line itself as its body, its event as `event.name`, and the span of the call it records
// (hex ids, as the line writes them) when that call was traced.
struct LogRecord {
  std::uint64_t time_unix_nanos = 0;
  std::string event;
  std::string body;
  std::string trace_id;  // 32 hex digits, or ""
  std::string span_id;   // 16 hex digits, or ""
};

// What the process says of itself on every export: service.name, service.version and
// service.instance.id.
struct TraceResource {
  std::string service_version;
  std::string service_instance;
};

}  // namespace sb::supervisor
