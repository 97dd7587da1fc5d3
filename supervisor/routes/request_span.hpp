// The server span of one caller's request over HTTP (docs/observability.md, "Spans"): the
// caller's trace context read from `params._meta` (MCP's way) or else the `traceparent`
// and `tracestate` headers, the span's name and attributes, and the context the computer
// receives written into the request's `params._meta` in place of the caller's.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "supervisor/http/types.hpp"
#include "supervisor/mcp/request.hpp"
#include "supervisor/telemetry/tracer.hpp"

namespace sb::supervisor {

// The span of `message` when it is a request (a method and an id), none otherwise.
// `message`'s params get the switchboard's traceparent (and the caller's tracestate, when
// it read; none otherwise).
std::shared_ptr<RequestSpan> start_request_span(Tracer& tracer, const HttpRequest& request,
                                                nlohmann::json& message,
                                                const CallerContext& context);

}  // namespace sb::supervisor
