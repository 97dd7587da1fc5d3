// The server span of one caller's request (docs/observability.md, "Spans"), over HTTP or a
// pod's socket alike: the caller's trace context read from `params._meta` (MCP's way) or
// else what its transport carried (HTTP's `traceparent` and `tracestate` headers), the
// span's name and attributes, and the context the computer receives written into the
// request's `params._meta` in place of the caller's. Then the request's answer, the
// messages during it and its abandonment, each recorded on the span.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "supervisor/mcp/request.hpp"
#include "supervisor/switching/switch_state.hpp"
#include "supervisor/telemetry/tracer.hpp"

namespace sb::supervisor {

// What a request's transport says of its trace besides the message: HTTP's headers (each
// when it came once) and MCP-Protocol-Version; nothing for a pod's socket.
struct TransportTrace {
  std::string_view protocol;  // network.protocol.name: "http" or "websocket"
  std::optional<std::string> traceparent;
  std::optional<std::string> tracestate;
  std::optional<std::string> protocol_version;
};

// The span of `message` when it is a request (a method and an id), none otherwise.
// `message`'s params get the switchboard's traceparent (and the caller's tracestate, when
// it read; none otherwise), and `context` the span's ids for the audit.
std::shared_ptr<RequestSpan> start_request_span(Tracer& tracer, nlohmann::json& message,
                                                CallerContext& context,
                                                const TransportTrace& transport);

// `inner`, ending `span` with the answer first; `http_status` says what status an answer
// gets (empty for a pod's socket, which has none). Without a span, `inner` itself.
McpDone traced(McpDone inner, const std::shared_ptr<RequestSpan>& span,
               std::function<std::optional<int>(const ReplyText&)> http_status);
// `inner`, each message to the caller an event of `span`.
McpMessage traced(McpMessage inner, const std::shared_ptr<RequestSpan>& span);
// `underway`, its abandonment ending `span` as abandoned.
Underway traced(Underway underway, const std::shared_ptr<RequestSpan>& span);

}  // namespace sb::supervisor
