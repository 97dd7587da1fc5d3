// Spans and log records in the OTLP/HTTP JSON encoding (the OpenTelemetry protocol
// specification: ids as lower-case hex, 64-bit numbers as decimal strings, enums as
// numbers): each item written on its own when it is queued, and an export request
// (ExportTraceServiceRequest, ExportLogsServiceRequest) joining a batch of them under one
// resource and one scope ("switchboard").
#pragma once

#include <string>
#include <vector>

#include "supervisor/telemetry/span.hpp"

namespace sb::supervisor {

enum class OtlpSignal { kTraces, kLogs };

// One span, or one audit line's log record, as its OTLP JSON object.
std::string otlp_json(const Span& span);
std::string otlp_json(const LogRecord& record);

// The export request of `items`, each written by otlp_json (spans for kTraces, log records
// for kLogs).
std::string otlp_request(OtlpSignal signal, const std::vector<std::string>& items,
                         const TraceResource& resource);

}  // namespace sb::supervisor
