#include "supervisor/mcp/handler.hpp"

#include "shared/jsonrpc.hpp"
#include "supervisor/mcp/completion.hpp"
#include "supervisor/mcp/exchange.hpp"
#include "supervisor/mcp/forward.hpp"
#include "supervisor/mcp/input_bridge.hpp"
#include "supervisor/mcp/lifecycle.hpp"
#include "supervisor/mcp/prompts.hpp"
#include "supervisor/mcp/resources.hpp"
#include "supervisor/mcp/subscriptions.hpp"
#include "supervisor/mcp/tasks.hpp"
#include "supervisor/mcp/tools.hpp"

namespace sb::supervisor {
namespace {

using json = nlohmann::json;

Underway refuse(const McpRequest& request, const json& id, const std::string& message) {
  const json no_message;
  return Exchange{no_message, nullptr, request}.finish(
      jsonrpc::error_response(id, jsonrpc::kInvalidRequest, message));
}

// A request with a method: to its handler, or -32601.
Underway answer(const Exchange& exchange, const std::string& method) {
  if (method == "initialize") return initialize(exchange);
  if (method == "ping")
    return exchange.finish(jsonrpc::result_response(exchange.id, json::object()));
  if (method == "tools/list") return tools_list(exchange);
  if (method == "tools/call") return tools_call(exchange);
  if (method == "logging/setLevel") return set_log_level(exchange);
  if (method == "server/discover") return discover(exchange);
  if (method == "tasks/get" || method == "tasks/update" || method == "tasks/result" ||
      method == "tasks/cancel")
    return task_request(exchange, method);
  if (method == "tasks/list") return tasks_list(exchange);
  if (method == "resources/list") return resources_list(exchange);
  if (method == "resources/templates/list") return resource_templates_list(exchange);
  if (method == "resources/read") return resources_read(exchange);
  if (method == "prompts/list") return prompts_list(exchange);
  if (method == "prompts/get") return prompts_get(exchange);
  if (method == "completion/complete") return complete(exchange);
  if (method == "resources/subscribe") return resources_subscribe(exchange);
  if (method == "subscriptions/listen") return subscriptions_listen(exchange);
  if (method == "resources/unsubscribe") return resources_unsubscribe(exchange);
  return exchange.finish(jsonrpc::error_response(
      exchange.id, jsonrpc::kMethodNotFound,
      "method " + backticked(method) + " is not served by the switchboard"));
}

}  // namespace

Underway handle_mcp(const json& message, McpRequest request) {
  if (!message.is_object()) return refuse(request, nullptr, "expected one JSON-RPC object");
  const auto id = message.find("id");
  const auto method = message.find("method");
  const bool has_id = id != message.end();
  if (has_id && !id->is_string() && !id->is_number() && !id->is_null())
    return refuse(request, nullptr, "id must be a string, a number or null");
  // MCP ids are strings or integers. A fraction, an exponent or an integer beyond 64
  // bits would come back as a different text than the caller sent, so it is refused
  // rather than answered under an id the caller cannot match (docs/protocol.md).
  if (has_id && id->is_number_float())
    return refuse(request, nullptr, "id must be a string or an integer within 64 bits");
  const Exchange exchange{message, has_id ? *id : json(), request};
  if (method == message.end() || !method->is_string()) {
    if (!has_id) return exchange.swallow();
    if (!message.contains("result") && !message.contains("error"))
      return refuse(request, *id, "missing method");
    return answer_routed_request(exchange);
  }
  if (!has_id) {
    if (*method == "notifications/cancelled") cancel_call(exchange);
    return exchange.swallow();  // other notifications from a caller have nowhere to go
  }
  if (exchange.stateless()) {
    if (auto taken_up = take_up_round(exchange)) return std::move(*taken_up);
  }
  return answer(exchange, method->get_ref<const std::string&>());
}

void relay_computer_notification(const McpServices& services, const std::string& computer,
                                 std::string body) {
  const json message = json::parse(body, nullptr, false);
  const json method = message.is_object() ? message.value("method", json()) : json();
  if (method == "notifications/tasks/status")
    return relay_task_status(services, computer, message, body);
  if (method == "notifications/resources/updated")
    return relay_resource_update(services, computer, message, body);
  if (method == "notifications/tools/list_changed" ||
      method == "notifications/prompts/list_changed")
    return relay_list_change(services, computer, body);
}

Underway handle_tools_call(const ScannedToolCall& call, McpRequest request) {
  const json no_message;  // nothing of it is read on this path
  return scanned_tools_call(Exchange{no_message, json::parse(call.id), request}, call);
}

}  // namespace sb::supervisor
