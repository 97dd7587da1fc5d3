#include "supervisor/mcp/caller_message.hpp"

#include "ipc/frame.hpp"
#include "shared/json_scan.hpp"
#include "shared/jsonrpc.hpp"

namespace sb::supervisor {
namespace {

// Whether `text` is one JSON value (RFC 8259), numbers beyond a double's range included.
bool valid_json(std::string_view text) {
  JsonScanner scanner(text, jsonrpc::kMaxNesting, JsonNumbers::kGrammatical);
  scanner.skip_space();
  if (!scanner.value(0)) return false;
  scanner.skip_space();
  return scanner.at_end();
}

MessageRefusal parse_error() {
  return MessageRefusal{jsonrpc::kParseError, "parse error"};
}

}  // namespace

std::optional<MessageRefusal> refuse_size(std::string_view text) {
  if (text.size() <= ipc::kMaxMessageSize) return std::nullopt;
  return MessageRefusal{jsonrpc::kInvalidRequest,
                        "request over 16 MiB: more than the switchboard passes to a computer"};
}

std::variant<nlohmann::json, MessageRefusal> read_caller_message(std::string_view text) {
  if (auto refusal = refuse_size(text)) return std::move(*refusal);
  if (!jsonrpc::nesting_within(text, jsonrpc::kMaxNesting)) return parse_error();
  if (text.find('\0') != std::string_view::npos) return parse_error();
  nlohmann::json message = nlohmann::json::parse(text, nullptr, false);
  if (message.is_discarded()) {
    // Valid JSON all the same, with a number beyond what a double holds (an id 1e400,
    // which could never come back as sent): an invalid request, not a parse error.
    if (!valid_json(text)) return parse_error();
    return MessageRefusal{jsonrpc::kInvalidRequest,
                          "a number beyond the range of a double; an id must be a string or "
                          "an integer within 64 bits"};
  }
  if (message.is_array())
    return MessageRefusal{jsonrpc::kInvalidRequest, "JSON-RPC batches are not supported"};
  return message;
}

}  // namespace sb::supervisor
