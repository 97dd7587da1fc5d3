// A computer's tools under the caller's grant (docs/protocol.md, "Tool list"): tools/list
// filtered to what the caller may call, with the switchboard's own vm_status beside them,
// and tools/call: vm_status answered locally, a tool outside the grant refused, any other
// forwarded, each call audited once.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "supervisor/mcp/call_scan.hpp"
#include "supervisor/mcp/exchange.hpp"
#include "supervisor/workers/registry.hpp"

namespace sb::supervisor {

inline constexpr std::string_view kStatusTool = "vm_status";

Underway tools_list(const Exchange& exchange);
// A tools/call read into the tree.
Underway tools_call(const Exchange& exchange);
// A plain tools/call read by the scanner: its id is a string or an integer, its params an
// object with a string name and, if any, object arguments.
Underway scanned_tools_call(const Exchange& exchange, const ScannedToolCall& call);

// The caller's tools/list reply from the computer's answer: the tools its grant allows and
// vm_status; only vm_status when the computer is not attached or its answer is no list. An
// error the computer answered is logged, as often as `errors_logged` lets it. What the
// tools say of themselves (Mcp-Param headers, task support) is learnt into
// `tool_book` when given.
nlohmann::json filter_tool_list(const nlohmann::json& id, const CallerContext& context,
                                const CallResult& result, LogThrottle& errors_logged,
                                ToolBook* tool_book = nullptr);

// The definition of vm_status for `computer`.
nlohmann::json status_tool_definition(std::string_view computer);

}  // namespace sb::supervisor
