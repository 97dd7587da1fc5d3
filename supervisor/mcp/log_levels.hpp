// Log messages for a 2026-07-28 caller (docs/protocol.md, "Eras"): that revision has no
// `logging/setLevel`; a request names the level it wants in
// `_meta["io.modelcontextprotocol/logLevel"]`, and a request that names none gets no log
// message at all. A handshake-era computer's messages are held to that.
#pragma once

#include <string>
#include <string_view>

#include "supervisor/mcp/exchange.hpp"

namespace sb::supervisor {

// The level the exchange's request names in its `_meta`, or "" when it names none of the
// levels MCP has.
std::string requested_log_level(const Exchange& exchange);

// Whether a message from the computer goes to a 2026-07-28 request that asked for
// `wanted` ("" for nothing): anything but a log message does; a log message only at
// `wanted` or above.
bool stateless_caller_takes(std::string_view message, std::string_view wanted);

}  // namespace sb::supervisor
