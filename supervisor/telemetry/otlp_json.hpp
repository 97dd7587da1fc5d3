// Spans (and log records) as the OTLP/HTTP JSON encoding of an ExportTraceServiceRequest (the
// OpenTelemetry protocol specification: ids as lower-case hex, 64-bit numbers as decimal strings,
// enums as numbers), one resource and one scope ("switchboard").
#pragma once

#include <string>
#include <vector>

#include "supervisor/telemetry/span.hpp"

namespace sb::supervisor {

std::string encode_otlp_traces(const std::vector<Span>& spans, const TraceResource& resource);
// Log records as an ExportLogsServiceRequest: INFO (severity 9), the line as a string body.
std::string encode_otlp_logs(const std::vector<LogRecord>& records, const TraceResource& resource);

}  // namespace sb::supervisor
