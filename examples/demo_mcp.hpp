// (1) The MCP server: pure functions from a request to its reply, safe to run on any thread.
// Three harmless tools: sys_info (the shape OpenAB Connect reads), echo and clock.
#pragma once

#include <string>

#include "examples/demo_computer.hpp"

namespace demo {

// The reply to one request (a message with a string `method` and a non-null `id`).
json reply_to(const json& request);
json rpc_error(const json& id, int code, const std::string& message);
// The tools offered, for the log: "sys_info, echo, clock".
std::string tool_names();

}  // namespace demo
