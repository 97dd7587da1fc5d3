#include "shared/jsonrpc.hpp"

#include <algorithm>
#include <array>

namespace sb::jsonrpc {

bool may_be_input_required(std::string_view method) {
  return method == "tools/call" || method == "resources/read" || method == "prompts/get";
}

std::optional<std::size_t> log_severity(std::string_view level) {
  static constexpr std::array<std::string_view, 8> kLevels{
      "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"};
  const auto found = std::find(kLevels.begin(), kLevels.end(), level);
  if (found == kLevels.end()) return std::nullopt;
  return static_cast<std::size_t>(found - kLevels.begin());
}

std::string_view relay_error_message(int code) {
  switch (code) {
    case kNotAttached:
      return "the VM is not connected to the switchboard; try again once it has attached";
    case kOverloaded:
      return "too many requests in flight toward the VM; retry shortly";
    case kTimeout:
      return "the VM did not answer in time; the call may or may not have run";
    case kDisconnected:
      return "the VM disconnected during the call; the call may or may not have run";
    default:
      return "error";
  }
}

bool nesting_within(std::string_view text, int limit) {
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

json error_response(const json& id, int code, std::string_view message) {
  return json{{"error", {{"code", code}, {"message", message}}}, {"id", id}, {"jsonrpc", "2.0"}};
}

json result_response(const json& id, json result) {
  return json{{"id", id}, {"jsonrpc", "2.0"}, {"result", std::move(result)}};
}

json text_tool_result(std::string_view text, bool is_error) {
  return json{{"content", json::array({{{"text", text}, {"type", "text"}}})},
              {"isError", is_error}};
}

}  // namespace sb::jsonrpc
