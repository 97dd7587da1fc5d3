#include "supervisor/mcp/tasks.hpp"

#include <chrono>

#include "ipc/offers.hpp"
#include "shared/jsonrpc.hpp"
#include "supervisor/mcp/forward.hpp"
#include "supervisor/mcp/reply_text.hpp"
#include "supervisor/mcp/tool_book.hpp"
#include "supervisor/metrics/metrics.hpp"

namespace sb::supervisor {
namespace {

using json = nlohmann::json;

constexpr int kMissingClientCapability = -32021;

// To a call in flight of the task's owner that takes messages; false when there is none.
bool deliver_task_status(const McpServices& services, const std::string& computer,
                         const std::string& task_id, const std::string& body) {
  const auto session = attached_session(services.workers, computer);
  if (!session) return false;
  const auto owner = services.tasks.owner(*session, task_id);
  if (!owner) return false;
  for (const std::uint64_t call_id : services.calls.calls_of(computer, *owner)) {
    if (services.workers.deliver(call_id, ipc::MessageMeta{ipc::MessageKind::kNotification}, body))
      return true;
  }
  return false;
}

}  // namespace

// Any id the caller does not own gets the answer a task that does not exist gets, from the
// switchboard itself, so the two cannot be told apart. A 2026-07-28 caller that did not
// declare the tasks extension in this request is told it needs it, as the extension says.
Underway task_request(const Exchange& exchange, const std::string& method) {
  const json* params = exchange.params();
  if (exchange.stateless() && !declares_tasks_extension(exchange)) {
    json reply = jsonrpc::error_response(exchange.id, kMissingClientCapability,
                                         "this request needs the tasks extension");
    reply["error"]["data"] =
        json{{"requiredCapabilities",
              {{"extensions", {{std::string(kTasksExtension), json::object()}}}}}};
    return exchange.finish(reply);
  }
  const json task_id = params ? params->value("taskId", json()) : json();
  const auto session = attached_session(exchange.services().workers, exchange.context().computer);
  if (!task_id.is_string() || !session ||
      !exchange.services().tasks.owns(*session, task_id.get<std::string>(),
                                      exchange.context().caller)) {
    return exchange.finish(
        jsonrpc::error_response(exchange.id, jsonrpc::kInvalidParams, "no such task"));
  }
  const auto& timeouts = exchange.config().timeouts;
  CallRequest request{
      .caller = exchange.context().caller,
      .caller_cap = exchange.context().caller_cap,
      // tasks/result waits for the task to finish, as a tool call would.
      .timeout = std::chrono::seconds(method == "tasks/result" ? timeouts.default_secs
                                                               : timeouts.control_secs),
      .method = method,
      .params_json = dump(*params),
      // A tool's result, as large as any.
      .reply_may_arrive = exchange.context().reply_may_arrive && method == "tasks/result"};
  return forward(exchange, std::move(request),
                 [id = exchange.id](CallResult result) { return relayed(id, std::move(result)); });
}

Underway tasks_list(const Exchange& exchange) {
  const auto session = attached_session(exchange.services().workers, exchange.context().computer);
  if (!session)
    return exchange.finish(jsonrpc::result_response(exchange.id, json{{"tasks", json::array()}}));
  CallRequest request{.caller = exchange.context().caller,
                      .caller_cap = exchange.context().caller_cap,
                      .timeout = std::chrono::seconds(exchange.config().timeouts.control_secs),
                      .method = "tasks/list",
                      .params_json = exchange.params_text()};
  return forward(
      exchange, std::move(request),
      [id = exchange.id, &tasks = exchange.services().tasks, session = *session,
       caller = exchange.context().caller](CallResult result) {
        if (result.status == ipc::CallStatus::kReplied) {
          if (auto kept = filter_task_list(result.reply_without_id, id, tasks, session, caller))
            return ReplyText{.body = dump(*kept)};
        }
        return relayed(id, std::move(result));
      });
}

bool declares_tasks_extension(const Exchange& exchange) {
  const json* capabilities = exchange.meta_member("io.modelcontextprotocol/clientCapabilities");
  if (!capabilities || !capabilities->is_object()) return false;
  const auto extensions = capabilities->find("extensions");
  return extensions != capabilities->end() && extensions->is_object() &&
         extensions->contains(kTasksExtension);
}

bool asks_for_handshake_task(const Exchange& exchange, std::string_view tool) {
  const json* params = exchange.params();
  return exchange.stateless() && params && !params->contains("task") &&
         declares_tasks_extension(exchange) && !exchange.computer_speaks_only_stateless() &&
         exchange.offered(ipc::offer::kTasksToolCall) &&
         exchange.services().tool_book.runs_as_task(exchange.context().computer, tool);
}

std::function<void(const CallResult&)> task_recorder(const Exchange& exchange) {
  const auto session = attached_session(exchange.services().workers, exchange.context().computer);
  if (!session) return {};
  return [&tasks = exchange.services().tasks, session = *session,
          caller = exchange.context().caller](const CallResult& result) {
    if (result.status != ipc::CallStatus::kReplied || result.kind == ipc::ReplyKind::kRpcError)
      return;
    const json reply = json::parse(result.reply_without_id, nullptr, false);
    // 2025-11-25 nests the task; the 2026-07-28 extension's result is the task itself.
    for (const char* path : {"/result/task/taskId", "/result/taskId"}) {
      const json::json_pointer pointer(path);
      if (reply.is_object() && reply.contains(pointer) && reply.at(pointer).is_string())
        return tasks.record(session, reply.at(pointer).get<std::string>(), caller);
    }
  };
}

std::optional<json> filter_task_list(const std::string& reply_without_id, const json& id,
                                     const TaskBook& tasks, const SessionKey& session,
                                     const std::string& caller) {
  json reply = json::parse(reply_without_id, nullptr, false);
  const auto list = reply.is_object() ? reply.find("result") : reply.end();
  if (list == reply.end() || !list->is_object() || !list->contains("tasks") ||
      !(*list)["tasks"].is_array())
    return std::nullopt;
  json kept = json::array();
  for (auto& task : (*list)["tasks"]) {
    const json task_id = task.is_object() ? task.value("taskId", json()) : json();
    if (task_id.is_string() && tasks.owns(session, task_id.get<std::string>(), caller))
      kept.push_back(std::move(task));
  }
  (*list)["tasks"] = std::move(kept);
  reply["id"] = id;
  return reply;
}

void relay_task_status(const McpServices& services, const std::string& computer,
                       const json& message, const std::string& body) {
  const auto params = message.find("params");
  const json task_id =
      params != message.end() && params->is_object() ? params->value("taskId", json()) : json();
  if (!task_id.is_string() ||
      !deliver_task_status(services, computer, task_id.get<std::string>(), body))
    services.metrics.notification_dropped(computer);
}

}  // namespace sb::supervisor
