// A reply's text for its caller, composed without copying the computer's bytes: the
// caller's id goes in front of the computer's reply, whose opening brace becomes the comma
// after it; and the relay's own errors for a call that got no reply.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "ipc/messages.hpp"
#include "supervisor/mcp/request.hpp"
#include "supervisor/workers/registry.hpp"

namespace sb::supervisor {

// `message_without_id` (a JSON object that lacks its id) with `id_text` in front.
ReplyText with_id_text(const std::string& id_text, std::string message_without_id);

// A computer's reply with the caller's id in front, whether it has all arrived or not.
ReplyText with_caller_id(const nlohmann::json& id, CallResult& result);

// The JSON-RPC error for a call that ended without a reply: -32002, -32003 or -32004
// (docs/protocol.md, "Errors").
nlohmann::json relay_error(const nlohmann::json& id, ipc::CallStatus status);

// A computer's reply as it came, or the relay's error (-32001 included) when there is none.
ReplyText relayed(const nlohmann::json& id, CallResult result);

}  // namespace sb::supervisor
