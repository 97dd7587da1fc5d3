// What a caller's request must carry for the revision it speaks, checked before anything
// is sent (docs/protocol.md, "Revisions"): its revision supported, its headers agreeing
// with its body, and, for the stateless 2026-07-28 revision, the request `_meta` and the
// headers that revision requires, and none of the methods it removed; and the HTTP status
// that revision gives an error.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "supervisor/http/types.hpp"
#include "supervisor/mcp/era.hpp"
#include "supervisor/mcp/tool_book.hpp"

namespace sb::supervisor {

// The first revision whose callers take a priming event and resume event streams
// (docs/protocol.md, "Resumable streams"); the stateless one has no streams to resume.
inline constexpr std::string_view kFirstResumableRevision = "2025-11-25";

// What the gate reads of a message: from its tree, or from the scanner's plain tools/call.
struct MessageFacts {
  nlohmann::json id;     // a string or an integer; null for none or any other
  bool request = false;  // it has an id: a request, which 2026-07-28 gives a _meta
  std::optional<std::string> method;
  // What Mcp-Name repeats: params.name of tools/call and prompts/get, params.uri of
  // resources/read, params.taskId of tasks/get, tasks/update and tasks/cancel.
  std::optional<std::string> name;
  bool has_meta = false;                    // params._meta is an object
  std::optional<std::string> meta_version;  // _meta's io.modelcontextprotocol/protocolVersion
  bool has_client_capabilities = false;     // _meta's io.modelcontextprotocol/clientCapabilities
};

MessageFacts facts_of(const nlohmann::json& message);
MessageFacts facts_of_tools_call(const nlohmann::json& id, std::string_view tool);

struct GateVerdict {
  bool stateless = false;  // the request speaks 2026-07-28
  // The answer instead of handling the request: an HTTP status and a JSON-RPC error.
  std::optional<HttpResponse> refusal;
};

GateVerdict check_revision(const HttpRequest& request, const MessageFacts& facts);

// The HTTP status of a 2026-07-28 caller's answer that is the JSON-RPC error `code`, its
// own or relayed from the computer: 404 for a method not served, 400 for a header
// mismatch, a missing client capability or an unsupported revision, 200 otherwise.
int stateless_error_status(std::int64_t code);

// A 2026-07-28 tools/call repeats each argument its tool marks with `x-mcp-header` in an
// Mcp-Param-<Name> header (SEP-2243): literally, or as `=?base64?…?=`. The refusal (400,
// -32020) when one is missing, malformed, disagrees with its argument, or names an
// argument the call does not have.
std::optional<HttpResponse> check_param_headers(const HttpRequest& request,
                                                const nlohmann::json& message,
                                                const std::vector<ParamHeader>& headers);

}  // namespace sb::supervisor
