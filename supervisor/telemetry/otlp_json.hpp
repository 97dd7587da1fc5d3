// Spans as the OTLP/HTTP JSON encoding of an ExportTraceServiceRequest (the OpenTelemetry
// protocol specification: ids as lower-case hex, 64-bit numbers as decimal strings, enums
// as numbers), one resource and one scope ("switchboard").
#pragma once

#include <string>
#include <vector>

#include "supervisor/telemetry/span.hpp"

namespace sb::supervisor {

std::string encode_otlp_traces(const std::vector<Span>& spans, const TraceResource& resource);

}  // namespace sb::supervisor
