// Northbound MCP (docs/protocol.md, "POST /mcp" to "Tasks"): one JSON-RPC message from a
// caller, already authenticated and resolved to a computer, answered locally or forwarded
// to that computer's worker. HTTP callers and pods share this code. The methods' handlers
// have files of their own: lifecycle.hpp, tools.hpp, tasks.hpp; forwarding and what a
// caller may do while a call is in flight, forward.hpp.
#pragma once

#include <nlohmann/json.hpp>

#include "supervisor/mcp/call_scan.hpp"
#include "supervisor/mcp/request.hpp"

namespace sb::supervisor {

// Handles one message. `request.done` runs exactly once, unless the returned Abandon
// (empty when nothing is pending) is called first.
Abandon handle_mcp(const nlohmann::json& message, McpRequest request);
// The same for a plain tools/call read by the scanner (call_scan.hpp): answered as
// handle_mcp() answers that request, with the caller's own params forwarded.
Abandon handle_tools_call(const ScannedToolCall& call, McpRequest request);

}  // namespace sb::supervisor
