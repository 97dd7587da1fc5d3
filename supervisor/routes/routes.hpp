// The HTTP routes (docs/protocol.md, "Routes"): token first, then the computer, then
// the body. Unknown and not-allowed computers get byte-identical 404s everywhere.
// GET /vm/attach reaches the computer door (computer_door.hpp) instead: it needs the
// socket itself.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "shared/timings.hpp"
#include "supervisor/http/services.hpp"
#include "supervisor/http/types.hpp"
#include "supervisor/routes/state.hpp"

namespace sb::supervisor {

// Handles one request, as RouteRequest says (http/types.hpp).
Underway route_request(SupervisorState& state, const HttpRequest& request, Respond respond,
                       SendEvent send_event);

// What the HTTP server serves: these routes and the computer door, over `state`.
HttpServices http_services(SupervisorState& state, const Timings& timings);

// Decodes one path segment; nothing when it is not valid percent-encoding.
std::optional<std::string> percent_decode(std::string_view segment);

}  // namespace sb::supervisor
