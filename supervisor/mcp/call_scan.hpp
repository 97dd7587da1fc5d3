// The plain tools/call, read without a JSON tree (docs/architecture.md, "A caller's
// request"). Most calls are one shape: {"jsonrpc", "id", "method": "tools/call",
// "params": {"name", "arguments"}}. For that shape alone the supervisor takes what it
// needs from one validating pass and forwards the caller's own `params` bytes; anything
// else (other members, `_meta`, a task, a malformed or unusual request) goes through the
// tree, which answers it as before.
//
// The policy must see the tool the computer will see. Forwarding the caller's bytes is
// only safe because this shape has no member twice at any level the switchboard or the
// computer reads by name: a request with a repeated (or escape-spelled repeated) member
// is not scanned, and the tree path re-serialises it with one value per member.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace sb::supervisor {

struct ScannedToolCall {
  std::string_view id;      // its JSON text: a string, or an integer within 64 bits
  std::string tool;         // params.name, decoded
  std::string_view params;  // the params object's JSON text, as the caller sent it
  std::optional<std::string_view> arguments;  // params.arguments' JSON text, an object
};

// The request when it is of the plain shape above and valid JSON (RFC 8259, UTF-8, nested
// at most `max_nesting` deep); nullopt for anything else. The views point into `body`.
std::optional<ScannedToolCall> scan_tools_call(std::string_view body, int max_nesting);

}  // namespace sb::supervisor
