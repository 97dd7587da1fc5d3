// MCP's own headers as a request carries them (docs/protocol.md, "Revisions"): the
// Mcp-Param-<Name> headers, and the first of MCP's headers that came more than once.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "supervisor/http/request_reader.hpp"

namespace sb::supervisor {

// Each Mcp-Param-<Name> header: <Name> as sent, and the value.
std::vector<std::pair<std::string, std::string>> mcp_params(const Request& request);

// The first of MCP-Protocol-Version, Mcp-Method, Mcp-Name and Mcp-Param-* that the
// request repeats, as sent: which of two values the caller meant, nobody can tell.
std::optional<std::string> repeated_mcp_header(const Request& request);

}  // namespace sb::supervisor
