// An MCP session's life as the switchboard answers it itself (docs/protocol.md,
// "Revisions"): initialize and its revision, the 2026-07-28 server/discover, and
// logging/setLevel, which a caller may pass on only when it is the computer's one client.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "supervisor/mcp/exchange.hpp"

namespace sb::supervisor {

Underway initialize(const Exchange& exchange);
Underway discover(const Exchange& exchange);
Underway set_log_level(const Exchange& exchange);

// What the switchboard tells a model about the computer behind it.
std::string instructions(std::string_view computer, bool ready);

// The revisions `initialize` negotiates and MCP-Protocol-Version may name, oldest first.
std::span<const std::string_view> supported_protocol_versions();
bool supported_protocol_version(std::string_view version);
std::string supported_protocol_versions_text();

}  // namespace sb::supervisor
