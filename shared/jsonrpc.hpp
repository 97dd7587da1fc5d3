// JSON-RPC shapes and the switchboard's error codes (docs/protocol.md, "Errors").
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

namespace sb::jsonrpc {

using nlohmann::json;

inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;
inline constexpr int kNotAttached = -32001;
inline constexpr int kOverloaded = -32002;
inline constexpr int kTimeout = -32003;
inline constexpr int kDisconnected = -32004;

inline constexpr std::string_view kProtocolVersion = "2025-06-18";
inline constexpr std::string_view kProductName = "openab-sb";

// Deeper JSON than this is refused before parsing: nobody's MCP needs it, and a parser
// or destructor that recurses must never meet a megabyte of brackets.
inline constexpr int kMaxNesting = 256;

// Whether arrays and objects in `text` nest at most `limit` deep (strings are skipped).
bool nesting_within(std::string_view text, int limit);

// The standard message of -32001 ... -32004.
std::string_view relay_error_message(int code);

// {"error":{"code":..,"message":..},"id":..,"jsonrpc":"2.0"}
json error_response(const json& id, int code, std::string_view message);
// {"id":..,"jsonrpc":"2.0","result":..}
json result_response(const json& id, json result);
// A local tool result: {"content":[{"text":..,"type":"text"}],"isError":..}
json text_tool_result(std::string_view text, bool is_error);

}  // namespace sb::jsonrpc
