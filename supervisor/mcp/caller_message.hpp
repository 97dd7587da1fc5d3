// A caller's JSON-RPC message read once, by the same rules whichever transport brought it
// (docs/protocol.md, "Errors"): an HTTP POST's body or a pod socket's text. The transport
// decides only what a refusal becomes: HTTP answers it with 400, a pod socket drops the
// message (docs/protocol.md, "Pod sockets").
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace sb::supervisor {

// Why a message is not read: a JSON-RPC error code (parse error or invalid request) and
// its message.
struct MessageRefusal {
  int code = 0;
  std::string message;
};

// A message larger than a frame to the worker carries, which would end the worker's
// channel (and its computer's session, for every caller): refused before anything else is
// read of it.
std::optional<MessageRefusal> refuse_size(std::string_view text);

// The message as a tree: one JSON object or value within the nesting limit, no NUL byte
// (nlohmann would stop at one and read what came before), every number within a double;
// a batch (an array) is refused.
std::variant<nlohmann::json, MessageRefusal> read_caller_message(std::string_view text);

}  // namespace sb::supervisor
