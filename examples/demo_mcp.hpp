// (1) The MCP server: pure functions from a request to its reply, safe to run on any thread.
// Three harmless tools: sys_info (the shape OpenAB Connect reads), echo and clock.
#pragma once

#include <string>

#include "examples/demo_computer.hpp"

namespace demo {

// Whether a message is a request to answer: an object with a string `method` and a
// non-null `id` (not a notification, a response or junk).
bool is_request(const json& message);
// The reply to one request.
json reply_to(const json& request);
json rpc_error(const json& id, int code, const std::string& message);
// The tools offered, for the log: "sys_info, echo, clock".
std::string tool_names();

}  // namespace demo
