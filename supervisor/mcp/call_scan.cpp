#include "supervisor/mcp/call_scan.hpp"

#include <cstdint>

#include "shared/json_scan.hpp"

namespace sb::supervisor {
namespace {

// A JSON-RPC id the caller will recognise when it comes back as the same text: a string,
// or an integer that no parser widens into a float.
bool plain_id(std::string_view token) {
  if (token.starts_with('"')) return true;
  return integer_token<std::int64_t>(token) || integer_token<std::uint64_t>(token);
}

class CallScanner {
 public:
  CallScanner(std::string_view body, int max_nesting) : json_(body, max_nesting) {}

  std::optional<ScannedToolCall> scan() {
    json_.skip_byte_order_mark();
    json_.skip_space();
    if (!json_.at('{')) return std::nullopt;
    bool jsonrpc = false;
    bool method = false;
    bool params = false;
    bool id = false;
    const bool parsed = json_.object(1, [&](std::string_view key, std::size_t) {
      if (key == "jsonrpc") return once(jsonrpc) && json_.value(1);
      if (key == "id") return once(id) && id_member();
      if (key == "method") return once(method) && method_member();
      if (key == "params") return once(params) && params_member();
      return false;  // a member the plain shape does not have
    });
    if (!parsed || !id || !method || !params || !named_) return std::nullopt;
    json_.skip_space();
    if (!json_.at_end()) return std::nullopt;
    return std::move(call_);
  }

 private:
  static bool once(bool& seen) {
    if (seen) return false;
    seen = true;
    return true;
  }

  bool id_member() {
    const std::size_t begin = json_.position();
    if (!json_.value(1)) return false;
    call_.id = json_.since(begin);
    return plain_id(call_.id);
  }

  bool method_member() {
    std::string decoded;
    const auto method = json_.string_token(&decoded);
    return method && *method == "tools/call";
  }

  bool params_member() {
    if (!json_.at('{')) return false;
    const std::size_t begin = json_.position();
    bool arguments = false;
    const bool parsed = json_.object(2, [&](std::string_view key, std::size_t) {
      if (key == "name") return once(named_) && name_member();
      if (key == "arguments") return once(arguments) && arguments_member();
      return false;
    });
    if (!parsed) return false;
    call_.params = json_.since(begin);
    return true;
  }

  bool name_member() {
    std::string decoded;
    const auto name = json_.string_token(&decoded);
    if (!name) return false;
    call_.tool = std::string(*name);
    return true;
  }

  bool arguments_member() {
    if (!json_.at('{')) return false;
    const std::size_t begin = json_.position();
    if (!json_.value(2)) return false;
    call_.arguments = json_.since(begin);
    return true;
  }

  JsonScanner json_;
  ScannedToolCall call_;  // what the scan has found so far
  bool named_ = false;    // params.name was seen
};

}  // namespace

std::optional<ScannedToolCall> scan_tools_call(std::string_view body, int max_nesting) {
  return CallScanner(body, max_nesting).scan();
}

}  // namespace sb::supervisor
