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

// Handles one message. `request.done` runs exactly once, unless the returned Underway's
// `abandon` (empty when nothing is pending) is called first.
Underway handle_mcp(const nlohmann::json& message, McpRequest request);
// The same for a plain tools/call read by the scanner (call_scan.hpp): answered as
// handle_mcp() answers that request, with the caller's own params forwarded.
Underway handle_tools_call(const ScannedToolCall& call, McpRequest request);

// A computer's notification that names no call, from its worker (the less trusted side:
// only a well-formed one goes anywhere): a task's status to its owner, a resource's
// update to its subscribers.
void relay_computer_notification(const McpServices& services, const std::string& computer,
                                 std::string body);

}  // namespace sb::supervisor
