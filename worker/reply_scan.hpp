// Reading a computer's message without building a JSON tree.
//
// A reply can be a 16 MiB screenshot. Parsing it into nlohmann::json and dumping it again
// cost the worker more than the rest of the relay together, so a message is validated in
// one pass over its bytes, only the few top-level facts the session needs are picked out,
// and the reply travels on as the computer's own bytes with its "id" member cut out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ipc/messages.hpp"
#include "shared/json_scan.hpp"

namespace sb::worker {

struct ScannedMessage {
  bool is_response = false;         // a top-level "result" or "error" member
  bool has_id = false;              // a top-level "id" member of any type
  std::optional<std::uint64_t> id;  // ... when it is a non-negative JSON integer
  TextSpan object;                  // the top-level object, braces included
  TextSpan id_cut;                  // what to remove so that "id" is gone: member and one comma
  ipc::ReplyKind kind = ipc::ReplyKind::kOk;
  std::optional<std::int64_t> error_code;  // error.code, when an integer
};

// Validates `text` as one JSON value (RFC 8259, UTF-8, containers nested at most
// `max_nesting` deep) and describes it when it is an object. nullopt for anything the
// session ignores: invalid JSON, a non-object, or an object with two "id" members (which
// could not be cut out unambiguously).
std::optional<ScannedMessage> scan_message(std::string_view text, int max_nesting);

// The scanned object without its "id" member: the body of a reply frame.
std::string without_id(std::string_view text, const ScannedMessage& message);

}  // namespace sb::worker
