#include "supervisor/mcp/handler.hpp"

#include <algorithm>
#include <array>
#include <chrono>

#include "shared/jsonrpc.hpp"
#include "shared/log.hpp"
#include "supervisor/audit/audit_log.hpp"
#include "supervisor/workers/status_json.hpp"

namespace sb::supervisor {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr std::string_view kStatusTool = "vm_status";
// Oldest first. The last is stateless: no initialize, so it is never negotiated, but its
// callers are served (docs/protocol.md, "Revisions").
constexpr std::array<std::string_view, 5> kProtocolVersions{
    "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"};
constexpr std::string_view kStatelessVersion = "2026-07-28";
constexpr std::string_view kNewestVersion = "2025-11-25";
// JSON-RPC code for a request its caller cancelled (the code MCP SDKs use for it).
constexpr int kRequestCancelled = -32800;
constexpr std::size_t kMaxToolNameChars = 128;
constexpr std::size_t kMaxAuditArgsChars = 512;

// Appended rather than `"`" + std::string(name) + "`"`, which g++ 12 at -O3 flags with a
// false -Wrestrict.
std::string backticked(std::string_view name) {
  std::string quoted;
  quoted.reserve(name.size() + 2);
  quoted += '`';
  quoted += name;
  quoted += '`';
  return quoted;
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

// The caller's id goes in front of the computer's message. The message's opening brace
// becomes the comma after the id, so its bytes stay where they are.
ReplyText with_id_text(const std::string& id_text, std::string message_without_id) {
  ReplyText text{.head = R"({"id":)" + id_text, .body = std::move(message_without_id)};
  const auto first_member = text.body.find_first_not_of(" \t\r\n", 1);
  if (text.body.size() < 2 || first_member == std::string::npos || text.body[first_member] == '}') {
    text.body = "}";  // no other member
  } else {
    text.body[0] = ',';
  }
  return text;
}

// A computer's reply with the caller's id in front, whether it has all arrived or not.
ReplyText with_caller_id(const json& id, CallResult& result) {
  if (result.arriving) {
    return ReplyText{.head = R"({"id":)" + dump(id) + ",", .arriving = std::move(result.arriving)};
  }
  return with_id_text(dump(id), std::move(result.reply_without_id));
}

class Handler {
 public:
  Handler(const json& message, const CallerContext& context, const McpServices& services,
          McpDone done, McpMessage on_message)
      : message_(message),
        context_(context),
        services_(services),
        done_(std::move(done)),
        on_message_(std::move(on_message)) {}

  Abandon run() {
    if (!message_.is_object()) {
      return finish(jsonrpc::error_response(nullptr, jsonrpc::kInvalidRequest,
                                            "expected one JSON-RPC object"));
    }
    const auto id = message_.find("id");
    const auto method = message_.find("method");
    const bool has_method = method != message_.end() && method->is_string();
    if (id != message_.end() && !id->is_string() && !id->is_number() && !id->is_null()) {
      return finish(jsonrpc::error_response(nullptr, jsonrpc::kInvalidRequest,
                                            "id must be a string, a number or null"));
    }
    // MCP ids are strings or integers. A fraction, an exponent or an integer beyond 64
    // bits would come back as a different text than the caller sent, so it is refused
    // rather than answered under an id the caller cannot match (docs/protocol.md).
    if (id != message_.end() && id->is_number_float()) {
      return finish(jsonrpc::error_response(nullptr, jsonrpc::kInvalidRequest,
                                            "id must be a string or an integer within 64 bits"));
    }
    if (!has_method) {
      if (id == message_.end()) return swallow();
      if (!message_.contains("result") && !message_.contains("error")) {
        return finish(jsonrpc::error_response(*id, jsonrpc::kInvalidRequest, "missing method"));
      }
      return answer_routed_request(*id);
    }
    const auto& name = method->get_ref<const std::string&>();
    if (id == message_.end()) {
      if (name == "notifications/cancelled") cancel_call();
      return swallow();  // other notifications from a caller have nowhere to go
    }
    id_ = *id;
    if (name == "initialize") return initialize();
    if (name == "ping") return finish(jsonrpc::result_response(id_, json::object()));
    if (name == "tools/list") return tools_list();
    if (name == "tools/call") return tools_call();
    if (name == "logging/setLevel") return set_log_level();
    if (name == "server/discover") return discover();
    if (name == "tasks/get" || name == "tasks/result" || name == "tasks/cancel")
      return task_request(name);
    if (name == "tasks/list") return tasks_list();
    return finish(jsonrpc::error_response(
        id_, jsonrpc::kMethodNotFound,
        "method " + backticked(name) + " is not served by the switchboard"));
  }

  // A plain tools/call, as the scanner read it: its id is a string or an integer, its
  // params an object with a string name and, if any, object arguments.
  Abandon scanned_tools_call(const ScannedToolCall& call) {
    id_ = json::parse(call.id);
    if (const auto refused = refused_tool_name(call.tool)) return finish(*refused);
    return call_tool(ToolCallParts{.tool = call.tool,
                                   .params_json = std::string(call.params),
                                   .arguments_json = call.arguments,
                                   .task = false});
  }

 private:
  Abandon swallow() {
    done_(std::nullopt);
    return {};
  }

  CallOwner owner() const {
    return CallOwner{context_.computer, context_.caller, context_.session};
  }

  // notifications/cancelled names one of this caller's calls by its own id.
  void cancel_call() {
    const auto params = message_.find("params");
    if (params == message_.end() || !params->is_object()) return;
    const auto request_id = params->find("requestId");
    if (request_id == params->end()) return;
    const auto reason = params->find("reason");
    const std::string why = reason != params->end() && reason->is_string()
                                ? reason->get<std::string>()
                                : std::string("cancelled by the caller");
    services_.calls.cancel(owner(), dump(*request_id), why);
  }

  // A response from the caller: its answer to a request the computer routed to it.
  Abandon answer_routed_request(const json& id) {
    const auto answer = services_.calls.take_answer(owner(), dump(id));
    if (answer) {
      json response{{"jsonrpc", "2.0"}};
      if (const auto result = message_.find("result"); result != message_.end()) {
        response["result"] = *result;
      } else {
        response["error"] = message_.at("error");
      }
      services_.workers.answer(answer->call_id, answer->key, dump(response));
    }
    return swallow();
  }

  Abandon finish(const json& reply) {
    done_(ReplyText{.body = dump(reply)});
    return {};
  }

  bool computer_ready() const {
    const auto view = services_.workers.view(context_.computer);
    return view && view->ready;
  }

  Abandon initialize() {
    std::string version(kNewestVersion);
    const auto params = message_.find("params");
    if (params != message_.end() && params->is_object()) {
      const auto asked = params->find("protocolVersion");
      if (asked != params->end() && asked->is_string() && *asked != kStatelessVersion &&
          supported_protocol_version(asked->get_ref<const std::string&>())) {
        version = asked->get<std::string>();
      }
    }
    const auto view = services_.workers.view(context_.computer);
    json capabilities{{"tools", {{"listChanged", false}}}};
    if (view && view->ready && view->status.offers_logging)
      capabilities["logging"] = json::object();
    return finish(jsonrpc::result_response(
        id_,
        json{{"capabilities", std::move(capabilities)},
             {"instructions", instructions(context_.computer, view && view->ready)},
             {"protocolVersion", version},
             {"serverInfo", {{"name", jsonrpc::kProductName}, {"version", SWITCHBOARD_VERSION}}}}));
  }

  // What a 2026-07-28 caller asks instead of initialize: the same facts, no session.
  Abandon discover() {
    const auto view = services_.workers.view(context_.computer);
    json capabilities{{"tools", {{"listChanged", false}}}};
    if (view && view->ready && view->status.offers_logging)
      capabilities["logging"] = json::object();
    const json server{{"name", jsonrpc::kProductName}, {"version", SWITCHBOARD_VERSION}};
    json versions = json::array();
    for (const auto version : kProtocolVersions) versions.push_back(version);
    return finish(jsonrpc::result_response(
        id_, json{{"_meta", {{"io.modelcontextprotocol/serverInfo", server}}},
                  {"capabilities", std::move(capabilities)},
                  {"instructions", instructions(context_.computer, view && view->ready)},
                  {"resultType", "complete"},
                  // Also at the top level, where drafts of the revision put it.
                  {"serverInfo", server},
                  {"supportedVersions", std::move(versions)}}));
  }

  // A logging level is per socket: one caller may set it only when no other caller shares
  // the computer. Either way the caller is told it took.
  Abandon set_log_level() {
    const config::Computer* computer = services_.config->find_computer(context_.computer);
    if (computer && computer->sole_client) {
      const auto params = message_.find("params");
      CallRequest request{.caller = context_.caller,
                          .caller_cap = context_.caller_cap,
                          .timeout = std::chrono::seconds(services_.config->timeouts.control_secs),
                          .method = "logging/setLevel",
                          .params_json = params == message_.end() ? "{}" : dump(*params)};
      services_.workers.forward(context_.computer, std::move(request), [](CallResult) {});
    }
    return finish(jsonrpc::result_response(id_, json::object()));
  }

  json status_only_list() const {
    return jsonrpc::result_response(
        id_, json{{"tools", json::array({status_tool_definition(context_.computer)})}});
  }

  Abandon tools_list() {
    const auto params = message_.find("params");
    CallRequest request{.caller = context_.caller,
                        .caller_cap = context_.caller_cap,
                        .timeout = std::chrono::seconds(services_.config->timeouts.control_secs),
                        .method = "tools/list",
                        .params_json = params == message_.end() ? "{}" : dump(*params)};
    return forward(
        std::move(request),
        [id = id_, context = context_](CallResult result) {
          return ReplyText{.body = dump(filtered_list(id, context, result))};
        },
        [](std::string_view) {});
  }

  // The computer session a task created now belongs to; nothing when none is attached.
  std::optional<ComputerSession> computer_session() const {
    const auto view = services_.workers.view(context_.computer);
    if (!view || !view->attached) return std::nullopt;
    return ComputerSession{context_.computer, view->status.attached_at_ms};
  }

  // tasks/get, tasks/result and tasks/cancel reach the computer only for a task this client
  // created; any other id gets the answer a task that does not exist gets, from the
  // switchboard itself, so the two cannot be told apart (docs/protocol.md, "Tasks").
  Abandon task_request(const std::string& method) {
    const auto params = message_.find("params");
    const json task_id =
        params != message_.end() && params->is_object() ? params->value("taskId", json()) : json();
    const auto session = computer_session();
    if (!task_id.is_string() || !session ||
        !services_.tasks.owns(*session, task_id.get<std::string>(), context_.caller)) {
      return finish(jsonrpc::error_response(id_, jsonrpc::kInvalidParams, "no such task"));
    }
    const auto& timeouts = services_.config->timeouts;
    CallRequest request{
        .caller = context_.caller,
        .caller_cap = context_.caller_cap,
        // tasks/result waits for the task to finish, as a tool call would.
        .timeout = std::chrono::seconds(method == "tasks/result" ? timeouts.default_secs
                                                                 : timeouts.control_secs),
        .method = method,
        .params_json = dump(*params),
        // A tool's result, as large as any.
        .reply_may_arrive = context_.reply_may_arrive && method == "tasks/result"};
    return forward(
        std::move(request),
        [id = id_](CallResult result) { return relayed(id, std::move(result)); },
        [](std::string_view) {});
  }

  // tasks/list is answered with the computer's list less every task of another client.
  Abandon tasks_list() {
    const auto params = message_.find("params");
    const auto session = computer_session();
    if (!session) return finish(jsonrpc::result_response(id_, json{{"tasks", json::array()}}));
    CallRequest request{.caller = context_.caller,
                        .caller_cap = context_.caller_cap,
                        .timeout = std::chrono::seconds(services_.config->timeouts.control_secs),
                        .method = "tasks/list",
                        .params_json = params == message_.end() ? "{}" : dump(*params)};
    return forward(
        std::move(request),
        [id = id_, &tasks = services_.tasks, session = *session,
         caller = context_.caller](CallResult result) {
          if (result.status != ipc::CallStatus::kReplied) return relayed(id, std::move(result));
          json reply = json::parse(result.reply_without_id, nullptr, false);
          const auto list = reply.is_object() ? reply.find("result") : reply.end();
          if (list == reply.end() || !list->is_object() || !list->contains("tasks") ||
              !(*list)["tasks"].is_array())
            return relayed(id, std::move(result));
          json kept = json::array();
          for (auto& task : (*list)["tasks"]) {
            const json task_id = task.is_object() ? task.value("taskId", json()) : json();
            if (task_id.is_string() && tasks.owns(session, task_id.get<std::string>(), caller))
              kept.push_back(std::move(task));
          }
          (*list)["tasks"] = std::move(kept);
          reply["id"] = id;
          return ReplyText{.body = dump(reply)};
        },
        [](std::string_view) {});
  }

  // A reply waits in memory for its caller only within the reply budget; past it, the
  // caller is told the switchboard is overloaded and other callers are served as before
  // (docs/robustness.md, "Memory").
  static ReplyBudget::Lease admit_reply(ReplyBudget& budget, CallResult& result) {
    if (result.status != ipc::CallStatus::kReplied) return {};
    auto lease =
        budget.reserve(result.arriving ? result.arriving->size() : result.reply_without_id.size());
    if (lease) {
      lease->keep(std::move(result.slot));  // the computer's slot, until written
      return std::move(*lease);
    }
    result = CallResult{ipc::CallStatus::kOverloaded, 0, {}};
    return {};
  }

  // A computer's reply as it came, or the relay's error when there is none.
  static ReplyText relayed(const json& id, CallResult result) {
    if (result.status == ipc::CallStatus::kReplied) return with_caller_id(id, result);
    if (result.status == ipc::CallStatus::kNotAttached)
      return ReplyText{
          .body = dump(jsonrpc::error_response(
              id, jsonrpc::kNotAttached, jsonrpc::relay_error_message(jsonrpc::kNotAttached)))};
    return ReplyText{.body = dump(relay_error(id, result.status))};
  }

  // A tools/call with params.task may create a task: the client that asked owns it.
  std::function<void(const CallResult&)> task_recorder() const {
    const auto session = computer_session();
    if (!session) return {};
    return [&tasks = services_.tasks, session = *session,
            caller = context_.caller](const CallResult& result) {
      if (result.status != ipc::CallStatus::kReplied || result.kind == ipc::ReplyKind::kRpcError)
        return;
      const json reply = json::parse(result.reply_without_id, nullptr, false);
      const json::json_pointer pointer("/result/task/taskId");
      if (!reply.is_object() || !reply.contains(pointer) || !reply.at(pointer).is_string()) return;
      tasks.record(session, reply.at(pointer).get<std::string>(), caller);
    };
  }

  // Forwards one request and keeps it nameable by its caller while it is in flight: a
  // cancel from the caller, a hang-up and the requests the computer routes to it all find
  // it through the call book (docs/protocol.md, "Cancellation").
  Abandon forward(CallRequest request, std::function<ReplyText(CallResult)> reply,
                  std::function<void(std::string_view outcome)> ended_early) {
    auto& book = services_.calls;
    auto& workers = services_.workers;
    request.max_total = std::chrono::seconds(services_.config->timeouts.max_total_secs);
    auto entry = std::make_shared<std::uint64_t>(0);
    if (on_message_) {
      request.on_message = [&book, &metrics = services_.metrics, computer = context_.computer,
                            entry,
                            sink = on_message_](const ipc::MessageMeta& meta, std::string body) {
        if (meta.kind == ipc::MessageKind::kProgress) metrics.progress_routed(computer);
        if (meta.kind != ipc::MessageKind::kRequest)
          return sink(ReplyText{.body = std::move(body)});
        const auto routed_id = book.route_request(*entry, meta.key);
        if (routed_id) sink(with_id_text(*routed_id, std::move(body)));
      };
    }
    const std::uint64_t call_id = workers.forward(
        context_.computer, std::move(request),
        [&book, &budget = services_.replies, entry, reply, done = done_](CallResult result) {
          book.close(*entry);
          auto lease = admit_reply(budget, result);
          ReplyText text = reply(std::move(result));
          text.lease = std::move(lease);
          done(std::move(text));
        });
    if (call_id == 0) return {};
    *entry = book.open(
        owner(), dump(id_), call_id,
        [&workers, call_id, ended_early, id = id_, done = done_](const std::string& reason) {
          workers.cancel(call_id, reason);
          ended_early("cancelled");
          done(ReplyText{
              .body = dump(jsonrpc::error_response(id, kRequestCancelled, "request cancelled"))});
        });
    return [&book, &workers, entry, call_id, ended_early] {
      book.close(*entry);
      workers.cancel(call_id, "caller disconnected");
      ended_early("abandoned");
    };
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

  // What a tools/call forwards and audits, from the tree or from the scanner.
  struct ToolCallParts {
    std::string tool;
    std::string params_json;                         // to the computer, as it is
    std::optional<std::string_view> arguments_json;  // for the audit
    bool task = false;
  };

  Abandon tools_call() {
    const auto params = message_.find("params");
    const auto name =
        (params != message_.end() && params->is_object()) ? params->find("name") : message_.end();
    if (params == message_.end() || !params->is_object() || name == params->end() ||
        !name->is_string()) {
      return finish(
          jsonrpc::error_response(id_, jsonrpc::kInvalidParams, "tools/call needs params.name"));
    }
    if (const auto refused = refused_tool_name(name->get_ref<const std::string&>()))
      return finish(*refused);
    const auto arguments = params->find("arguments");
    if (arguments != params->end() && !arguments->is_object()) {
      return finish(jsonrpc::error_response(id_, jsonrpc::kInvalidParams,
                                            "params.arguments must be an object"));
    }
    const std::string arguments_json = arguments == params->end() || !services_.config->audit_args
                                           ? std::string()
                                           : dump(*arguments);
    return call_tool(
        ToolCallParts{.tool = name->get<std::string>(),
                      .params_json = dump(*params),
                      .arguments_json = arguments == params->end()
                                            ? std::nullopt
                                            : std::optional<std::string_view>(arguments_json),
                      .task = params->contains("task")});
  }

  std::optional<json> refused_tool_name(const std::string& tool) const {
    const std::size_t length = utf8_length(tool);
    if (length == 0 || length > kMaxToolNameChars) {
      return jsonrpc::error_response(id_, jsonrpc::kInvalidParams,
                                     "params.name must be 1-128 characters");
    }
    return std::nullopt;
  }

  Abandon call_tool(const ToolCallParts& parts) {
    const std::string& tool = parts.tool;
    CallAudit audit{.services = services_,
                    .principal = context_.caller,
                    .computer = context_.computer,
                    .tool = tool,
                    .tool_label = tool == kStatusTool || context_.tools.names.contains(tool)
                                      ? tool
                                      : std::string(kOtherTool),
                    .args = audit_args(parts.arguments_json),
                    .started = Clock::now()};

    if (tool == kStatusTool) {
      const auto view = services_.workers.view(context_.computer);
      json status =
          view ? computer_status_json(*view, context_.wildcard)
               : json{{"attached", false}, {"computer", context_.computer}, {"ready", false}};
      json result{{"content", json::array({{{"text", dump(status)}, {"type", "text"}}})},
                  {"isError", false},
                  {"structuredContent", status}};
      audit.write("ok", std::nullopt, 0);
      return finish(jsonrpc::result_response(id_, std::move(result)));
    }
    if (!context_.tools.allows(tool)) {
      audit.write("denied", std::nullopt, 0);
      return finish(jsonrpc::result_response(
          id_, jsonrpc::text_tool_result(
                   "the switchboard's policy does not allow " + backticked(tool) + " for " +
                       backticked(context_.caller) + " on " + backticked(context_.computer),
                   true)));
    }

    CallRequest request{.caller = context_.caller,
                        .caller_cap = context_.caller_cap,
                        .timeout = std::chrono::seconds(services_.config->timeouts.for_tool(tool)),
                        .method = "tools/call",
                        .params_json = parts.params_json};
    audit.forwarded = true;
    auto shared_audit = std::make_shared<CallAudit>(std::move(audit));
    auto record_task = parts.task ? task_recorder() : nullptr;
    request.reply_may_arrive = context_.reply_may_arrive && !record_task;  // it reads it whole
    services_.metrics.call_started(context_.computer, context_.caller);
    return forward(
        std::move(request),
        [id = id_, shared_audit, record_task](CallResult result) {
          if (record_task) record_task(result);
          return call_reply(id, std::move(result), shared_audit);
        },
        [shared_audit](std::string_view outcome) {
          shared_audit->write(outcome, std::nullopt, 0);
        });
  }

  json audit_args(std::optional<std::string_view> arguments_json) const {
    if (!services_.config->audit_args) return nullptr;
    if (!arguments_json) return "";
    return truncate_chars(std::string(*arguments_json), kMaxAuditArgsChars);
  }

  struct CallAudit {
    McpServices services;
    std::string principal;
    std::string computer;
    std::string tool;
    std::string tool_label;  // for metrics: a name from the config, or "other"
    json args;
    Clock::time_point started;
    bool forwarded = false;

    // The call's one record, in the audit log and the metrics alike.
    void write(std::string_view outcome, std::optional<std::int64_t> error_code,
               std::size_t response_bytes) const {
      const auto elapsed = Clock::now() - started;
      services.metrics.call_ended(CallEnd{.computer = computer,
                                          .client = principal,
                                          .tool = tool_label,
                                          .outcome = outcome,
                                          .duration = elapsed,
                                          .reply_bytes = response_bytes,
                                          .forwarded = forwarded});
      const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count();
      services.audit.write_call(CallRecord{.principal = principal,
                                           .computer = computer,
                                           .tool = tool,
                                           .outcome = outcome,
                                           .error_code = error_code,
                                           .ms = ms,
                                           .response_bytes = response_bytes,
                                           .args = args});
    }
  };

  static void audit_reply(ipc::ReplyKind kind, std::optional<std::int64_t> error_code,
                          std::size_t response_bytes, const CallAudit& audit) {
    if (kind == ipc::ReplyKind::kRpcError) {
      audit.write("rpc_error", error_code, response_bytes);
    } else {
      audit.write(kind == ipc::ReplyKind::kToolError ? "tool_error" : "ok", std::nullopt,
                  response_bytes);
    }
  }

  // A reply passed on as it arrives is audited once it has: a worker that dies half-way
  // through it has disconnected its caller, who gets a cut-off response.
  static void audit_when_arrived(ipc::ArrivingBody& body, const CallResult& result,
                                 std::shared_ptr<const CallAudit> audit) {
    body.follow([&body, kind = result.kind, error_code = result.error_code,
                 response_bytes = result.response_bytes, audit = std::move(audit)] {
      if (body.complete()) audit_reply(kind, error_code, response_bytes, *audit);
      if (body.failed()) audit->write("disconnected", jsonrpc::kDisconnected, 0);
    });
  }

  static ReplyText call_reply(const json& id, CallResult result,
                              const std::shared_ptr<const CallAudit>& shared_audit) {
    const CallAudit& audit = *shared_audit;
    switch (result.status) {
      case ipc::CallStatus::kReplied: {
        ReplyText text = with_caller_id(id, result);
        if (text.arriving) {
          audit_when_arrived(*text.arriving, result, shared_audit);
        } else {
          audit_reply(result.kind, result.error_code, result.response_bytes, audit);
        }
        return text;
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
  McpMessage on_message_;
  json id_;
};

}  // namespace

Abandon handle_mcp(const json& message, const CallerContext& context, const McpServices& services,
                   McpDone done, McpMessage on_message) {
  return Handler(message, context, services, std::move(done), std::move(on_message)).run();
}

Abandon handle_tools_call(const ScannedToolCall& call, const CallerContext& context,
                          const McpServices& services, McpDone done, McpMessage on_message) {
  const json no_message;  // nothing of it is read on this path
  return Handler(no_message, context, services, std::move(done), std::move(on_message))
      .scanned_tools_call(call);
}

namespace {

// To a call in flight of the task's owner that takes messages; false when there is none.
bool deliver_task_status(const McpServices& services, const std::string& computer,
                         const json& task_id, const std::string& body) {
  const auto view = services.workers.view(computer);
  if (!view || !view->attached) return false;
  const auto client = services.tasks.owner(ComputerSession{computer, view->status.attached_at_ms},
                                           task_id.get<std::string>());
  if (!client) return false;
  for (const std::uint64_t call_id : services.calls.calls_of(computer, *client)) {
    if (services.workers.deliver(call_id, ipc::MessageMeta{ipc::MessageKind::kNotification}, body))
      return true;
  }
  return false;
}

}  // namespace

void relay_task_status(const McpServices& services, const std::string& computer, std::string body) {
  // The worker is the less trusted side: only a well-formed task status goes anywhere.
  const json message = json::parse(body, nullptr, false);
  if (!message.is_object() || message.value("method", json()) != "notifications/tasks/status")
    return;
  const auto params = message.find("params");
  const json task_id =
      params != message.end() && params->is_object() ? params->value("taskId", json()) : json();
  if (!task_id.is_string() || !deliver_task_status(services, computer, task_id, body))
    services.metrics.notification_dropped(computer);
}

McpServices mcp_services(const SupervisorState& state) {
  return McpServices{state.workers, state.audit,   state.calls, state.tasks,
                     state.replies, state.metrics, state.config};
}

bool supported_protocol_version(std::string_view version) {
  return std::find(kProtocolVersions.begin(), kProtocolVersions.end(), version) !=
         kProtocolVersions.end();
}

std::string supported_protocol_versions_text() {
  std::string text;
  for (const auto version : kProtocolVersions) {
    if (!text.empty()) text += ", ";
    text += version;
  }
  return text;
}

}  // namespace sb::supervisor
