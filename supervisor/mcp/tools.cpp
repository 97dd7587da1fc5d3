#include "supervisor/mcp/tools.hpp"

#include <chrono>

#include "shared/jsonrpc.hpp"
#include "shared/log.hpp"
#include "supervisor/mcp/call_audit.hpp"
#include "supervisor/mcp/forward.hpp"
#include "supervisor/mcp/reply_text.hpp"
#include "supervisor/mcp/result_shape.hpp"
#include "supervisor/mcp/tasks.hpp"
#include "supervisor/mcp/tool_book.hpp"
#include "supervisor/metrics/metrics.hpp"
#include "supervisor/workers/status_json.hpp"

namespace sb::supervisor {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kMaxToolNameChars = 128;

std::size_t utf8_length(std::string_view text) {
  std::size_t count = 0;
  for (unsigned char c : text) count += (c & 0xC0) != 0x80;
  return count;
}

// What a tools/call forwards and audits, from the tree or from the scanner.
struct ToolCallParts {
  std::string tool;
  std::string params_json;                         // to the computer, as it is
  std::optional<std::string_view> arguments_json;  // for the audit
  bool task = false;
};

std::optional<json> refused_tool_name(const json& id, const std::string& tool) {
  const std::size_t length = utf8_length(tool);
  if (length == 0 || length > kMaxToolNameChars) {
    return jsonrpc::error_response(id, jsonrpc::kInvalidParams,
                                   "params.name must be 1-128 characters");
  }
  return std::nullopt;
}

Underway status_call(const Exchange& exchange, const CallAudit& audit) {
  const auto view = exchange.services().workers.view(exchange.context().computer);
  json status =
      view ? computer_status_json(*view, exchange.context().wildcard)
           : json{{"attached", false}, {"computer", exchange.context().computer}, {"ready", false}};
  json result = complete({{"content", json::array({{{"text", dump(status)}, {"type", "text"}}})},
                          {"isError", false},
                          {"structuredContent", status}},
                         exchange.context().era);
  audit.write("ok", std::nullopt, 0);
  return exchange.finish(jsonrpc::result_response(exchange.id, std::move(result)), "vm_status");
}

// A tool on a computer that is not attached answers as a tool that failed: the caller's
// model reads why, rather than its client raising an error.
ReplyText call_reply(const json& id, Era era, CallResult result,
                     const std::shared_ptr<const CallAudit>& audit) {
  if (result.status != ipc::CallStatus::kNotAttached)
    return audited_reply(id, std::move(result), audit);
  audit->write("not_attached", jsonrpc::kNotAttached, 0);
  return ReplyText{.body = dump(jsonrpc::result_response(
                       id, complete(jsonrpc::text_tool_result(
                                        jsonrpc::relay_error_message(jsonrpc::kNotAttached), true),
                                    era))),
                   .tool_error = true,
                   .not_attached = true};
}

Underway call_tool(const Exchange& exchange, const ToolCallParts& parts) {
  const CallerContext& context = exchange.context();
  const std::string& tool = parts.tool;
  CallAudit audit{.services = exchange.services(),
                  .principal = context.caller,
                  .oauth_issuer = context.oauth_issuer,
                  .oauth_subject = context.oauth_subject,
                  .trace_id = context.trace_id,
                  .span_id = context.span_id,
                  .computer = context.computer,
                  .tool = tool,
                  .tool_label = tool == kStatusTool || context.tools.names.contains(tool)
                                    ? tool
                                    : std::string(kOtherTool),
                  .args = audit_args(exchange.config().audit_args, parts.arguments_json),
                  // A call that crossed a switch is timed from its start before it.
                  .started = context.carried ? context.carried->started : Clock::now()};
  if (tool == kStatusTool) return status_call(exchange, audit);
  if (!context.tools.allows(tool)) {
    audit.write("denied", std::nullopt, 0);
    return exchange.finish(
        jsonrpc::result_response(
            exchange.id,
            complete(jsonrpc::text_tool_result(
                         "the switchboard's policy does not allow " + backticked(tool) + " for " +
                             backticked(context.caller) + " on " + backticked(context.computer),
                         true),
                     context.era)),
        "policy");
  }

  CallRequest request{.caller = context.caller,
                      .caller_cap = context.caller_cap,
                      .timeout = std::chrono::seconds(exchange.config().timeouts.for_tool(tool)),
                      .method = "tools/call",
                      .params_json = parts.params_json};
  audit.forwarded = true;
  auto shared_audit = std::make_shared<CallAudit>(std::move(audit));
  auto record_task = parts.task ? task_recorder(exchange) : nullptr;
  request.reply_may_arrive = context.reply_may_arrive && !record_task;  // it reads it whole
  exchange.services().metrics.call_started(context.computer, context.caller);
  return forward(
      exchange, std::move(request),
      [id = exchange.id, era = context.era, shared_audit, record_task](CallResult result) {
        if (record_task) record_task(result);
        return call_reply(id, era, std::move(result), shared_audit);
      },
      [shared_audit](std::string_view outcome) { shared_audit->write(outcome, std::nullopt, 0); });
}

}  // namespace

Underway tools_list(const Exchange& exchange) {
  CallRequest request{.caller = exchange.context().caller,
                      .caller_cap = exchange.context().caller_cap,
                      .timeout = std::chrono::seconds(exchange.config().timeouts.control_secs),
                      .method = "tools/list",
                      .params_json = exchange.params_text()};
  return forward(exchange, std::move(request),
                 [id = exchange.id, context = exchange.context(),
                  &errors_logged = exchange.services().tools_list_errors,
                  &tool_book = exchange.services().tool_book](CallResult result) {
                   return ReplyText{.body = dump(filter_tool_list(id, context, result,
                                                                  errors_logged, &tool_book)),
                                    .not_attached = result.status == ipc::CallStatus::kNotAttached};
                 });
}

Underway tools_call(const Exchange& exchange) {
  const json* params = exchange.params();
  const auto name = params ? params->find("name") : exchange.message.end();
  if (!params || name == params->end() || !name->is_string()) {
    return exchange.finish(jsonrpc::error_response(exchange.id, jsonrpc::kInvalidParams,
                                                   "tools/call needs params.name"));
  }
  if (const auto refused = refused_tool_name(exchange.id, name->get_ref<const std::string&>()))
    return exchange.finish(*refused);
  const auto arguments = params->find("arguments");
  if (arguments != params->end() && !arguments->is_object()) {
    return exchange.finish(jsonrpc::error_response(exchange.id, jsonrpc::kInvalidParams,
                                                   "params.arguments must be an object"));
  }
  const std::string arguments_json = arguments == params->end() || !exchange.config().audit_args
                                         ? std::string()
                                         : dump(*arguments);
  const std::string& tool = name->get_ref<const std::string&>();
  std::string params_json;
  if (asks_for_handshake_task(exchange, tool)) {
    json with_task = *params;
    with_task["task"] = json::object();
    params_json = dump(with_task);
  } else {
    params_json = dump(*params);
  }
  return call_tool(
      exchange,
      ToolCallParts{.tool = tool,
                    .params_json = std::move(params_json),
                    .arguments_json = arguments == params->end()
                                          ? std::nullopt
                                          : std::optional<std::string_view>(arguments_json),
                    .task = params->contains("task") || declares_tasks_extension(exchange)});
}

Underway scanned_tools_call(const Exchange& exchange, const ScannedToolCall& call) {
  if (const auto refused = refused_tool_name(exchange.id, call.tool))
    return exchange.finish(*refused);
  return call_tool(exchange, ToolCallParts{.tool = call.tool,
                                           .params_json = std::string(call.params),
                                           .arguments_json = call.arguments,
                                           .task = false});
}

json filter_tool_list(const json& id, const CallerContext& context, const CallResult& result,
                      LogThrottle& errors_logged, ToolBook* tool_book) {
  json only_status{{"tools", json::array({status_tool_definition(context.computer)})}};
  shape_list(only_status, true, context.era);
  const json status_only = jsonrpc::result_response(id, std::move(only_status));
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
    if (const auto count = errors_logged.due()) {
      log_warn("computer answered tools/list with an error", {{"error", dump(*error)},
                                                              {"computer", context.computer},
                                                              {"count", std::to_string(*count)}});
    }
    return status_only;
  }
  const auto result_member = reply.find("result");
  if (result_member == reply.end() || !result_member->is_object()) return status_only;
  const auto tools = result_member->find("tools");
  if (tools == result_member->end() || !tools->is_array()) return status_only;
  if (tool_book) tool_book->learn(context.computer, *tools);
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
  shape_list(*result_member, !context.tools.all, context.era);
  reply["id"] = id;
  return reply;
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

}  // namespace sb::supervisor
