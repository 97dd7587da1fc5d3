#include "supervisor/mcp/reply_text.hpp"

#include "shared/jsonrpc.hpp"
#include "supervisor/mcp/exchange.hpp"

namespace sb::supervisor {
namespace {

using json = nlohmann::json;

// `{"id":` and the id's text.
std::string id_head(std::string_view id_text) {
  std::string head = R"({"id":)";
  head += id_text;
  return head;
}

}  // namespace

ReplyText with_id_text(const std::string& id_text, std::string message_without_id) {
  ReplyText text{.head = id_head(id_text), .body = std::move(message_without_id)};
  const auto first_member = text.body.find_first_not_of(" \t\r\n", 1);
  if (text.body.size() < 2 || first_member == std::string::npos || text.body[first_member] == '}') {
    text.body.assign(1, '}');  // no other member (`= "}"` trips g++ 12's false -Wrestrict)
  } else {
    text.body[0] = ',';
  }
  return text;
}

ReplyText with_caller_id(const json& id, CallResult& result) {
  const auto error_code =
      result.kind == ipc::ReplyKind::kRpcError ? result.error_code : std::nullopt;
  if (result.arriving) {
    std::string head = id_head(dump(id));
    head += ',';
    return ReplyText{.head = std::move(head),
                     .arriving = std::move(result.arriving),
                     .error_code = error_code,
                     .tool_error = result.kind == ipc::ReplyKind::kToolError};
  }
  ReplyText text = with_id_text(dump(id), std::move(result.reply_without_id));
  text.error_code = error_code;
  text.tool_error = result.kind == ipc::ReplyKind::kToolError;
  return text;
}

json relay_error(const json& id, ipc::CallStatus status) {
  const int code = status == ipc::CallStatus::kOverloaded ? jsonrpc::kOverloaded
                   : status == ipc::CallStatus::kTimeout  ? jsonrpc::kTimeout
                                                          : jsonrpc::kDisconnected;
  return jsonrpc::error_response(id, code, jsonrpc::relay_error_message(code));
}

ReplyText relayed(const json& id, CallResult result) {
  if (result.status == ipc::CallStatus::kReplied) return with_caller_id(id, result);
  const json error =
      result.status == ipc::CallStatus::kNotAttached
          ? jsonrpc::error_response(id, jsonrpc::kNotAttached,
                                    jsonrpc::relay_error_message(jsonrpc::kNotAttached))
          : relay_error(id, result.status);
  return ReplyText{.body = dump(error),
                   .error_code = error_code_of(error),
                   .not_attached = result.status == ipc::CallStatus::kNotAttached};
}

}  // namespace sb::supervisor
