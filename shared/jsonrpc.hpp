// JSON-RPC shapes and the switchboard's error codes (docs/protocol.md, "Errors").
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
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
// 2026-07-28's "unsupported protocol version", with the supported ones in `data.supported`.
inline constexpr int kUnsupportedRevision = -32022;

inline constexpr std::string_view kProtocolVersion = "2025-06-18";
inline constexpr std::string_view kProductName = "openab-sb";
// The stateless revision (docs/protocol.md, "Eras"): `_meta` on every request.
inline constexpr std::string_view kStatelessRevision = "2026-07-28";
// 2026-07-28's tasks extension (SEP-2663), declared under the capabilities' `extensions`.
inline constexpr std::string_view kTasksExtension = "io.modelcontextprotocol/tasks";

// Whether 2026-07-28 lets a result of `method` be input-required.
bool may_be_input_required(std::string_view method);

// A log level's severity (MCP's levels, RFC 5424's order: "debug" is 0, "emergency" 7), or
// nothing for a name that is none of them.
std::optional<std::size_t> log_severity(std::string_view level);

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
