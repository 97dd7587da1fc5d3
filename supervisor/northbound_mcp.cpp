#include "supervisor/northbound_mcp.hpp"

#include <chrono>

#include "shared/jsonrpc.hpp"
#include "shared/log.hpp"
#include "supervisor/audit_log.hpp"
#include "supervisor/computer_status.hpp"

namespace sb::supervisor {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr std::string_view kStatusTool = "vm_status";
constexpr std::size_t kMaxToolNameChars = 128;
constexpr std::size_t kMaxAuditArgsChars = 512;

std::string backticked(std::string_view name) {
  return "`" + std::string(name) + "`";
}

std::size_t utf8_length(std::string_view text) {
  std::size_t count = 0;
  for (unsigned char c : text) count += (c & 0xC0) != 0x80;
  return count;
}

// The first `limit` characters of `text` followed by an ellipsis, when it is longer.
std::string truncate_chars(const std::string& text, std::size_t limit) {
  std::size_t count = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) continue;
    if (count++ == limit) return text.substr(0, i) + "\u2026";
  }
  return text;
}

json status_tool_definition(std::string_view computer) {
  return json{
      {"description", "Reports whether the remote computer " + backticked(computer) +
                          " is connected to OpenAB Switchboard, since when, and what it reported "
                          "about itself. Answered by the switchboard itself, so it works while the "
                          "computer is offline."},
      {"inputSchema",
       {{"additionalProperties", false}, {"properties", json::object()}, {"type", "object"}}},
      {"name", kStatusTool}};
}

std::string instructions(std::string_view computer, bool ready) {
  if (ready) {
    return "A remote computer is connected through OpenAB Switchboard as " + backticked(computer) +
           ". Its tools are in tools/list next to vm_status. Calls cross the network, so a latency "
           "of a "
           "second or more is normal. Never assume that a call which timed out did not run.";
  }
  return "The remote computer " + backticked(computer) +
         " is not connected to OpenAB Switchboard right now; only vm_status is available. Call it, "
         "or "
         "list tools again later.";
}

std::string dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

// The caller's id goes in front of the computer's reply. The reply's opening brace becomes
// the comma after the id, so its bytes stay where they are.
ReplyText with_caller_id(const json& id, std::string reply_without_id) {
  ReplyText text{.head = R"({"id":)" + dump(id), .body = std::move(reply_without_id)};
  const auto first_member = text.body.find_first_not_of(" \t\r\n", 1);
  if (text.body.size() < 2 || first_member == std::string::npos || text.body[first_member] == '}') {
    text.body = "}";  // no other member
  } else {
    text.body[0] = ',';
  }
  return text;
}

class Handler {
 public:
  Handler(const json& message, const CallerContext& context, const McpServices& services,
          McpDone done)
      : message_(message), context_(context), services_(services), done_(std::move(done)) {}

  Abandon run() {
    if (!message_.is_object()) {
      return finish(jsonrpc::error_response(nullptr, jsonrpc::kInvalidRequest,
                                            "expected one JSON-RPC object"));
    }
    const auto id = message_.find("id");
    const auto method = message_.find("method");
    const bool has_method = method != message_.end() && method->is_string();
    if (id == message_.end() || !has_method) {
      if (id != message_.end() && !message_.contains("result") && !message_.contains("error")) {
        return finish(jsonrpc::error_response(*id, jsonrpc::kInvalidRequest, "missing method"));
      }
      done_(std::nullopt);  // a notification or a response: swallowed
      return {};
    }
    id_ = *id;
    const auto& name = method->get_ref<const std::string&>();
    if (name == "initialize") return initialize();
    if (name == "ping") return finish(jsonrpc::result_response(id_, json::object()));
    if (name == "tools/list") return tools_list();
    if (name == "tools/call") return tools_call();
    return finish(jsonrpc::error_response(
        id_, jsonrpc::kMethodNotFound,
        "method " + backticked(name) + " is not served by the switchboard"));
  }

 private:
  Abandon finish(const json& reply) {
    done_(ReplyText{.body = dump(reply)});
    return {};
  }

  bool computer_ready() const {
    const auto view = services_.workers.view(context_.computer);
    return view && view->ready;
  }

  Abandon initialize() {
    std::string version(jsonrpc::kProtocolVersion);
    const auto params = message_.find("params");
    if (params != message_.end() && params->is_object()) {
      const auto asked = params->find("protocolVersion");
      if (asked != params->end() && asked->is_string() &&
          (*asked == "2025-06-18" || *asked == "2025-03-26")) {
        version = asked->get<std::string>();
      }
    }
    return finish(jsonrpc::result_response(
        id_,
        json{{"capabilities", {{"tools", {{"listChanged", false}}}}},
             {"instructions", instructions(context_.computer, computer_ready())},
             {"protocolVersion", version},
             {"serverInfo", {{"name", jsonrpc::kProductName}, {"version", SWITCHBOARD_VERSION}}}}));
  }

  json status_only_list() const {
    return jsonrpc::result_response(
        id_, json{{"tools", json::array({status_tool_definition(context_.computer)})}});
  }

  Abandon tools_list() {
    const auto params = message_.find("params");
    CallRequest request{.caller = context_.principal,
                        .caller_cap = context_.caller_cap,
                        .timeout = std::chrono::seconds(services_.config->timeouts.control_secs),
                        .method = "tools/list",
                        .params_json = params == message_.end() ? "{}" : dump(*params)};
    auto& workers = services_.workers;
    const std::uint64_t call_id =
        workers.forward(context_.computer, std::move(request),
                        [id = id_, context = context_, done = done_](CallResult result) {
                          done(ReplyText{.body = dump(filtered_list(id, context, result))});
                        });
    if (call_id == 0) return {};
    return [&workers, call_id] { workers.cancel(call_id); };
  }

  static json filtered_list(const json& id, const CallerContext& context,
                            const CallResult& result) {
    const json status_only = jsonrpc::result_response(
        id, json{{"tools", json::array({status_tool_definition(context.computer)})}});
    switch (result.status) {
      case ipc::CallStatus::kNotAttached:
        return status_only;
      case ipc::CallStatus::kOverloaded:
      case ipc::CallStatus::kTimeout:
      case ipc::CallStatus::kDisconnected:
        return relay_error(id, result.status);
      case ipc::CallStatus::kReplied:
        break;
    }
    json reply = json::parse(result.reply_without_id, nullptr, false);
    if (!reply.is_object()) return status_only;
    if (const auto error = reply.find("error"); error != reply.end()) {
      log_warn("computer answered tools/list with an error",
               {{"error", dump(*error)}, {"computer", context.computer}});
      return status_only;
    }
    const auto result_member = reply.find("result");
    if (result_member == reply.end() || !result_member->is_object()) return status_only;
    const auto tools = result_member->find("tools");
    if (tools == result_member->end() || !tools->is_array()) return status_only;
    json kept = json::array();
    for (auto& tool : *tools) {
      const auto name = tool.is_object() ? tool.find("name") : tool.end();
      if (!tool.is_object() || name == tool.end() || !name->is_string()) continue;
      const auto& tool_name = name->get_ref<const std::string&>();
      if (tool_name == kStatusTool || !context.tools.allows(tool_name)) continue;
      kept.push_back(std::move(tool));
    }
    kept.push_back(status_tool_definition(context.computer));
    (*result_member)["tools"] = std::move(kept);
    reply["id"] = id;
    return reply;
  }

  static json relay_error(const json& id, ipc::CallStatus status) {
    const int code = status == ipc::CallStatus::kOverloaded ? jsonrpc::kOverloaded
                     : status == ipc::CallStatus::kTimeout  ? jsonrpc::kTimeout
                                                            : jsonrpc::kDisconnected;
    return jsonrpc::error_response(id, code, jsonrpc::relay_error_message(code));
  }

  Abandon tools_call() {
    const auto params = message_.find("params");
    const auto name =
        (params != message_.end() && params->is_object()) ? params->find("name") : message_.end();
    if (params == message_.end() || !params->is_object() || name == params->end() ||
        !name->is_string()) {
      return finish(
          jsonrpc::error_response(id_, jsonrpc::kInvalidParams, "tools/call needs params.name"));
    }
    const std::string tool = name->get<std::string>();
    const std::size_t length = utf8_length(tool);
    if (length == 0 || length > kMaxToolNameChars) {
      return finish(jsonrpc::error_response(id_, jsonrpc::kInvalidParams,
                                            "params.name must be 1-128 characters"));
    }
    const auto arguments = params->find("arguments");
    if (arguments != params->end() && !arguments->is_object()) {
      return finish(jsonrpc::error_response(id_, jsonrpc::kInvalidParams,
                                            "params.arguments must be an object"));
    }
    CallAudit audit{.services = services_,
                    .principal = context_.principal,
                    .computer = context_.computer,
                    .tool = tool,
                    .args = audit_args(arguments == params->end() ? nullptr : &*arguments),
                    .started = Clock::now()};

    if (tool == kStatusTool) {
      const auto view = services_.workers.view(context_.computer);
      json status =
          view ? computer_status_json(*view, context_.wildcard)
               : json{{"attached", false}, {"computer", context_.computer}, {"ready", false}};
      json result{{"content", json::array({{{"text", dump(status)}, {"type", "text"}}})},
                  {"isError", false},
                  {"structuredContent", status}};
      audit.write("ok", nullptr, 0);
      return finish(jsonrpc::result_response(id_, std::move(result)));
    }
    if (!context_.tools.allows(tool)) {
      audit.write("denied", nullptr, 0);
      return finish(jsonrpc::result_response(
          id_, jsonrpc::text_tool_result(
                   "the switchboard's policy does not allow " + backticked(tool) + " for " +
                       backticked(context_.principal) + " on " + backticked(context_.computer),
                   true)));
    }

    CallRequest request{.caller = context_.principal,
                        .caller_cap = context_.caller_cap,
                        .timeout = std::chrono::seconds(services_.config->timeouts.for_tool(tool)),
                        .method = "tools/call",
                        .params_json = dump(*params)};
    auto shared_audit = std::make_shared<CallAudit>(std::move(audit));
    auto& workers = services_.workers;
    const std::uint64_t call_id =
        workers.forward(context_.computer, std::move(request),
                        [id = id_, shared_audit, done = done_](CallResult result) {
                          done(call_reply(id, std::move(result), *shared_audit));
                        });
    if (call_id == 0) return {};
    return [&workers, call_id, shared_audit] {
      workers.cancel(call_id);
      shared_audit->write("abandoned", nullptr, 0);
    };
  }

  json audit_args(const json* arguments) const {
    if (!services_.config->audit_args) return nullptr;
    if (!arguments) return "";
    return truncate_chars(dump(*arguments), kMaxAuditArgsChars);
  }

  struct CallAudit {
    McpServices services;
    std::string principal;
    std::string computer;
    std::string tool;
    json args;
    Clock::time_point started;

    void write(std::string_view outcome, json error_code, std::size_t response_bytes) const {
      const auto ms =
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started).count();
      services.audit.write("call", {{"principal", principal},
                                    {"computer", computer},
                                    {"tool", tool},
                                    {"outcome", outcome},
                                    {"error_code", std::move(error_code)},
                                    {"ms", ms},
                                    {"response_bytes", response_bytes},
                                    {"args", args}});
    }
  };

  static ReplyText call_reply(const json& id, CallResult result, const CallAudit& audit) {
    switch (result.status) {
      case ipc::CallStatus::kReplied: {
        if (result.kind == ipc::ReplyKind::kRpcError) {
          audit.write("rpc_error", result.error_code ? json(*result.error_code) : json(nullptr),
                      result.response_bytes);
        } else {
          audit.write(result.kind == ipc::ReplyKind::kToolError ? "tool_error" : "ok", nullptr,
                      result.response_bytes);
        }
        return with_caller_id(id, std::move(result.reply_without_id));
      }
      case ipc::CallStatus::kNotAttached:
        audit.write("not_attached", jsonrpc::kNotAttached, 0);
        return ReplyText{.body = dump(jsonrpc::result_response(
                             id, jsonrpc::text_tool_result(
                                     jsonrpc::relay_error_message(jsonrpc::kNotAttached), true)))};
      case ipc::CallStatus::kOverloaded:
        audit.write("overloaded", jsonrpc::kOverloaded, 0);
        break;
      case ipc::CallStatus::kTimeout:
        audit.write("timeout", jsonrpc::kTimeout, 0);
        break;
      case ipc::CallStatus::kDisconnected:
        audit.write("disconnected", jsonrpc::kDisconnected, 0);
        break;
    }
    return ReplyText{.body = dump(relay_error(id, result.status))};
  }

  const json& message_;
  const CallerContext& context_;
  const McpServices& services_;
  McpDone done_;
  json id_;
};

}  // namespace

Abandon handle_mcp(const json& message, const CallerContext& context, const McpServices& services,
                   McpDone done) {
  return Handler(message, context, services, std::move(done)).run();
}

}  // namespace sb::supervisor
