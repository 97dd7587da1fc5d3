// The HTTP routes (docs/protocol.md, "Routes"): token first, then the computer, then
// the body. Unknown and not-allowed computers get byte-identical 404s everywhere.
// (GET /vm/attach is the connection's business: it needs the socket itself.)
#pragma once

#include "supervisor/http/types.hpp"
#include "supervisor/routes/state.hpp"

namespace sb::supervisor {

// Handles one request; `respond` runs exactly once unless the returned Abandon is called.
// `send_event` may run before it, when the caller accepts an event stream.
Abandon route_request(SupervisorState& state, const HttpRequest& request, Respond respond,
                      SendEvent send_event);

// The path without its query string.
std::string_view request_path(std::string_view target);

// Decodes one path segment; nothing when it is not valid percent-encoding.
std::optional<std::string> percent_decode(std::string_view segment);

}  // namespace sb::supervisor
