#include "supervisor/routes/revision_gate.hpp"

#include <algorithm>
#include <array>

#include "shared/jsonrpc.hpp"
#include "shared/text.hpp"
#include "supervisor/mcp/lifecycle.hpp"

namespace sb::supervisor {
namespace {

using json = nlohmann::json;

// The 2026-07-28 revision's codes.
constexpr int kHeaderMismatch = -32020;
constexpr int kMissingClientCapability = -32021;

// Gone from 2026-07-28 (a stateless revision has no session to initialize, ping or set a
// level on, and subscriptions and task results moved elsewhere): 404, -32601.
constexpr std::array<std::string_view, 7> kRemovedMethods{
    "initialize",   "ping",      "logging/setLevel", "resources/subscribe", "resources/unsubscribe",
    "tasks/result", "tasks/list"};

std::optional<std::string> string_at(const json& object, std::string_view key) {
  const auto found = object.find(key);
  if (found == object.end() || !found->is_string()) return std::nullopt;
  return found->get<std::string>();
}

// The member Mcp-Name repeats for `method`, or null.
const char* named_member(std::string_view method) {
  if (method == "tools/call" || method == "prompts/get") return "name";
  if (method == "resources/read") return "uri";
  if (method == "tasks/get" || method == "tasks/update" || method == "tasks/cancel")
    return "taskId";
  return nullptr;
}

HttpResponse refusal(int status, const json& id, int code, const std::string& message,
                     json data = nullptr) {
  json reply = jsonrpc::error_response(id, code, message);
  if (!data.is_null()) reply["error"]["data"] = std::move(data);
  return json_response(status, reply.dump());
}

HttpResponse unsupported(const json& id, const std::string& requested) {
  json supported = json::array();
  for (const auto version : supported_protocol_versions()) supported.push_back(version);
  return refusal(400, id, jsonrpc::kUnsupportedRevision,
                 "unsupported protocol revision; supported: " + supported_protocol_versions_text(),
                 json{{"requested", requested}, {"supported", std::move(supported)}});
}

// 2026-07-28 callers say in every request who they are and what they can take.
std::optional<HttpResponse> missing_meta(const MessageFacts& facts) {
  if (!facts.has_meta)
    return refusal(400, facts.id, jsonrpc::kInvalidParams,
                   "a 2026-07-28 request needs params._meta");
  if (!facts.meta_version)
    return refusal(400, facts.id, jsonrpc::kInvalidParams,
                   "params._meta needs io.modelcontextprotocol/protocolVersion");
  if (!facts.has_client_capabilities)
    return refusal(400, facts.id, jsonrpc::kInvalidParams,
                   "params._meta needs io.modelcontextprotocol/clientCapabilities");
  return std::nullopt;
}

bool ascii(std::string_view text) {
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

// A header's value as the caller meant it (docs/protocol.md, "Revisions"): as sent when it
// is ASCII, or what `=?base64?…?=` encodes, which is how a value outside ASCII is sent.
// A message that says what is wrong otherwise.
struct HeaderValue {
  std::optional<std::string> value;
  std::string problem;
};

HeaderValue header_value(std::string_view name, std::string_view raw) {
  constexpr std::string_view kOpening = "=?base64?";
  constexpr std::string_view kClosing = "?=";
  raw = trim(raw);
  if (!ascii(raw))
    return {.problem = "the " + std::string(name) +
                       " header is not ASCII: send such a value as =?base64?...?="};
  if (raw.size() < kOpening.size() + kClosing.size() || !raw.starts_with(kOpening) ||
      !raw.ends_with(kClosing))
    return {.value = std::string(raw)};
  auto decoded =
      decode_base64(raw.substr(kOpening.size(), raw.size() - kOpening.size() - kClosing.size()));
  if (!decoded) return {.problem = std::string(name) + " is not valid Base64"};
  return {.value = std::move(decoded)};
}

// Headers repeat the method and what it names, and must agree with the body; a
// 2026-07-28 caller must send them.
std::optional<HttpResponse> header_mismatch(const HttpRequest& request, const MessageFacts& facts,
                                            bool stateless) {
  const auto mismatch = [&](const std::string& message) {
    return refusal(400, facts.id, kHeaderMismatch, message);
  };
  if (stateless && facts.method && !request.mcp_method)
    return mismatch("a 2026-07-28 request needs the Mcp-Method header");
  if (request.mcp_method && facts.method != *request.mcp_method)
    return mismatch("the Mcp-Method header does not match the body's method");
  if (stateless && facts.name && !request.mcp_name)
    return mismatch("a 2026-07-28 " + *facts.method + " needs the Mcp-Name header");
  if (!request.mcp_name || !facts.name) return std::nullopt;
  const HeaderValue name = header_value("Mcp-Name", *request.mcp_name);
  if (!name.value) return mismatch(name.problem);
  if (*facts.name != *name.value)
    return mismatch(std::string("the Mcp-Name header does not match params.") +
                    named_member(*facts.method));
  return std::nullopt;
}

// Whether a header's value is the argument: a string as itself, a number as a number
// (5.0 is 5), anything else as its JSON text.
bool same_argument(const std::string& value, const json& argument) {
  if (argument.is_string()) return value == argument.get_ref<const std::string&>();
  if (argument.is_number()) {
    const json number = json::parse(value, nullptr, /*allow_exceptions=*/false);
    return number.is_number() && number == argument;
  }
  return value == argument.dump();
}

const std::string* param_header(const HttpRequest& request, std::string_view name) {
  for (const auto& [sent, value] : request.mcp_params) {
    if (ascii_lowercase(sent) == ascii_lowercase(name)) return &value;
  }
  return nullptr;
}

}  // namespace

MessageFacts facts_of(const json& message) {
  MessageFacts facts;
  if (!message.is_object()) return facts;
  const auto id = message.find("id");
  facts.request = id != message.end();
  if (facts.request && (id->is_string() || id->is_number_integer())) facts.id = *id;
  facts.method = string_at(message, "method");
  const auto params = message.find("params");
  if (params == message.end() || !params->is_object()) return facts;
  if (const char* member = facts.method ? named_member(*facts.method) : nullptr)
    facts.name = string_at(*params, member);
  const auto meta = params->find("_meta");
  if (meta == params->end() || !meta->is_object()) return facts;
  facts.has_meta = true;
  facts.meta_version = string_at(*meta, "io.modelcontextprotocol/protocolVersion");
  const auto capabilities = meta->find("io.modelcontextprotocol/clientCapabilities");
  facts.has_client_capabilities = capabilities != meta->end() && capabilities->is_object();
  return facts;
}

MessageFacts facts_of_tools_call(const json& id, std::string_view tool) {
  return MessageFacts{.id = id, .request = true, .method = "tools/call", .name = std::string(tool)};
}

GateVerdict check_revision(const HttpRequest& request, const MessageFacts& facts) {
  if (request.repeated_mcp_header) {
    return {.refusal =
                refusal(400, facts.id, kHeaderMismatch,
                        "the " + *request.repeated_mcp_header + " header is sent more than once")};
  }
  const auto& header = request.protocol_version;
  if (header && facts.meta_version && *header != *facts.meta_version) {
    return {.refusal = refusal(400, facts.id, kHeaderMismatch,
                               "the MCP-Protocol-Version header does not match _meta's "
                               "protocolVersion")};
  }
  const auto revision = header ? header : facts.meta_version;
  if (revision && !supported_protocol_version(*revision))
    return {.refusal = unsupported(facts.id, *revision)};
  GateVerdict verdict{.stateless = revision == kStatelessRevision};
  // Requests carry who the caller is and what it can take; notifications need not.
  if (verdict.stateless && facts.method && facts.request) {
    verdict.refusal = missing_meta(facts);
    if (verdict.refusal) return verdict;
  }
  verdict.refusal = header_mismatch(request, facts, verdict.stateless);
  if (verdict.refusal) return verdict;
  const bool removed = facts.method && std::find(kRemovedMethods.begin(), kRemovedMethods.end(),
                                                 *facts.method) != kRemovedMethods.end();
  if (verdict.stateless && removed) {
    verdict.refusal = refusal(404, facts.id, jsonrpc::kMethodNotFound,
                              "method `" + *facts.method + "` is not in revision 2026-07-28");
  }
  return verdict;
}

int stateless_error_status(std::int64_t code) {
  if (code == jsonrpc::kMethodNotFound) return 404;
  if (code == kHeaderMismatch || code == kMissingClientCapability ||
      code == jsonrpc::kUnsupportedRevision)
    return 400;
  return 200;
}

std::optional<HttpResponse> check_param_headers(const HttpRequest& request, const json& message,
                                                const std::vector<ParamHeader>& headers) {
  const MessageFacts facts = facts_of(message);
  const auto mismatch = [&](const std::string& message) {
    return refusal(400, facts.id, kHeaderMismatch, message);
  };
  const json* arguments = nullptr;
  if (const auto params = message.find("params"); params != message.end() && params->is_object()) {
    const auto found = params->find("arguments");
    if (found != params->end() && found->is_object()) arguments = &*found;
  }
  for (const ParamHeader& expected : headers) {
    const std::string name = "Mcp-Param-" + expected.header;
    const std::string* sent = param_header(request, expected.header);
    const auto argument = arguments ? arguments->find(expected.argument) : json::const_iterator();
    if (!arguments || argument == arguments->end() || argument->is_null()) {
      if (sent) return mismatch(name + " names an argument the call does not have");
      continue;
    }
    if (!sent) return mismatch("the call needs the " + name + " header");
    const HeaderValue value = header_value(name, *sent);
    if (!value.value) return mismatch(value.problem);
    if (!same_argument(*value.value, *argument))
      return mismatch("the " + name + " header does not match arguments." + expected.argument);
  }
  return std::nullopt;
}

}  // namespace sb::supervisor
