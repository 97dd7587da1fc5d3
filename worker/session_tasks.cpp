// Session's task conversations across eras (session.hpp; docs/protocol.md, "Tasks across
// eras"). The handshake era's tasks (2025-11-25) and 2026-07-28's tasks extension name the
// same thing differently, and a few of a caller's requests have no single counterpart in
// the computer's era; for those the worker holds a short conversation with the computer in
// place of the request, and the supervisor sees one request and one reply:
// - a handshake-era caller's tasks/result, on a computer that speaks only 2026-07-28 (which
//   has no tasks/result), is tasks/get until the task has ended, answered with the task's
//   result or error; what the task asks in the meantime (its inputRequests) is asked of the
//   caller on the tasks/result stream, as a handshake-era computer would, and the answers
//   go back with tasks/update;
// - that caller's tasks/cancel, whose 2026 answer is empty, is followed by tasks/get, whose
//   task is the answer the caller's revision has;
// - a 2026-07-28 caller's tasks/get of an ended task on a handshake-era computer is followed
//   by tasks/result, whose result (or error) goes into the task, where that revision has it.
// The members of each revision's shapes are renamed by the supervisor (supervisor/mcp/
// result_shape.*); here only the steps are taken.
#include <algorithm>
#include <utility>

#include "shared/jsonrpc.hpp"
#include "worker/session.hpp"
#include "worker/stateless_revision.hpp"

namespace sb::worker {
namespace {

// How often a task is asked after, when the computer names no interval or an odd one.
constexpr std::chrono::milliseconds kDefaultPoll{1000};
constexpr std::chrono::milliseconds kFastestPoll{100};
constexpr std::chrono::milliseconds kSlowestPoll{5000};

constexpr std::string_view kRelatedTask = "io.modelcontextprotocol/related-task";

json error_of(std::string message) {
  return json{{"code", jsonrpc::kInternalError}, {"message", std::move(message)}};
}

std::string task_id_of(std::string_view params_json) {
  const json params = json::parse(params_json, nullptr, /*allow_exceptions=*/false);
  const auto id = params.is_object() ? params.find("taskId") : params.end();
  return id != params.end() && id->is_string() ? id->get<std::string>() : std::string();
}

bool ended(const json& task) {
  const json status = task.value("status", json());
  return status == "completed" || status == "failed" || status == "cancelled";
}

std::chrono::milliseconds poll_interval(const json& task) {
  const auto interval = task.find("pollIntervalMs");
  if (interval == task.end() || !interval->is_number_unsigned()) return kDefaultPoll;
  return std::clamp(std::chrono::milliseconds(interval->get<std::uint64_t>()), kFastestPoll,
                    kSlowestPoll);
}

// What tasks/result answers once a 2026 task has ended: its result, marked as the task's as
// the handshake era marks it, or its error.
json ended_task_response(const json& task, const std::string& task_id) {
  const auto result = task.find("result");
  const auto error = task.find("error");
  if (result != task.end() && result->is_object()) {
    json marked = *result;
    if (!marked.contains("_meta") || !marked["_meta"].is_object()) marked["_meta"] = json::object();
    marked["_meta"][std::string(kRelatedTask)] = json{{"taskId", task_id}};
    return json{{"jsonrpc", "2.0"}, {"result", std::move(marked)}};
  }
  if (error != task.end() && error->is_object() && error->contains("code"))
    return json{{"error", *error}, {"jsonrpc", "2.0"}};
  if (task.value("status", json()) == "cancelled")
    return json{{"error", error_of("the task was cancelled")}, {"jsonrpc", "2.0"}};
  return json{{"error", error_of("the task ended without a result")}, {"jsonrpc", "2.0"}};
}

}  // namespace

// Sets the conversation a forwarded request needs, if any, and names the method that goes to
// the computer first.
void Session::begin_task_conversation(PendingCall& call, std::string& method,
                                      std::string_view params) {
  if (!method.starts_with("tasks/")) return;
  const bool stateless_only = (offers_ & ipc::offer::kStatelessOnly) != 0;
  const bool stateless_caller = names_stateless_revision(params);
  TaskStep step = TaskStep::kNone;
  if (stateless_only && !stateless_caller && method == "tasks/result") {
    step = TaskStep::kPoll;
    method = "tasks/get";
  } else if (stateless_only && !stateless_caller && method == "tasks/cancel") {
    step = TaskStep::kCancel;
  } else if (!stateless_only && stateless_caller && method == "tasks/get" &&
             (offers_ & ipc::offer::kTasksToolCall)) {
    step = TaskStep::kGet;
  }
  if (step == TaskStep::kNone) return;
  call.task_id = task_id_of(params);
  if (!call.task_id.empty()) call.task_step = step;
}

// A reply within a conversation: true when the worker takes it over (the next step is on its
// way, or the call was answered); false when it goes to the caller as it is.
bool Session::follow_task(PendingCall& call, std::string_view reply_text) {
  const json reply = json::parse(reply_text, nullptr, /*allow_exceptions=*/false);
  const auto found = reply.is_object() ? reply.find("result") : reply.end();
  if (found == reply.end() || !found->is_object()) {
    // An error ends the conversation with it, but that of tasks/result inside a task.
    if (call.task_step != TaskStep::kInline || !reply.is_object() || !reply.contains("error"))
      return false;
    json task = json::parse(call.task_view);
    task["error"] = reply["error"];
    end_task_conversation(std::move(call), json{{"jsonrpc", "2.0"}, {"result", std::move(task)}});
    return true;
  }
  const json& result = *found;
  switch (call.task_step) {
    case TaskStep::kPoll:
      return on_task_polled(call, result);
    case TaskStep::kUpdate:
      poll_task_later(std::move(call), std::chrono::milliseconds(0));
      return true;
    case TaskStep::kCancel:
      call.task_step = TaskStep::kView;
      send_task_step(std::move(call), "tasks/get", json::object());
      return true;
    case TaskStep::kGet:
      // A computer that inlined the result itself answers in 2026-07-28 already.
      if (!ended(result) || result.contains("resultType") || result.contains("result") ||
          result.contains("error"))
        return false;
      call.task_step = TaskStep::kInline;
      call.task_view = result.dump(-1, ' ', false, json::error_handler_t::replace);
      send_task_step(std::move(call), "tasks/result", json::object());
      return true;
    case TaskStep::kInline: {
      json task = json::parse(call.task_view);
      task["result"] = result;
      end_task_conversation(std::move(call), json{{"jsonrpc", "2.0"}, {"result", std::move(task)}});
      return true;
    }
    case TaskStep::kView:
    case TaskStep::kNone:
      break;
  }
  return false;
}

// The task as tasks/get showed it: ended, it answers the caller's tasks/result; asking, its
// requests go to the caller; otherwise it is asked after again.
bool Session::on_task_polled(PendingCall& call, const json& task) {
  if (ended(task)) {
    const std::string task_id = call.task_id;
    end_task_conversation(std::move(call), ended_task_response(task, task_id));
    return true;
  }
  const auto requests = task.find("inputRequests");
  if (task.value("status", json()) == "input_required" && requests != task.end() && call.stream &&
      ask_requests(call, *requests, json()))
    return true;
  poll_task_later(std::move(call), poll_interval(task));
  return true;
}

void Session::poll_task_later(PendingCall call, std::chrono::milliseconds after) {
  call.task_step = TaskStep::kPoll;
  const auto due = call.deadline.at();
  const std::uint64_t id = pending_.renew(std::move(call));
  set_deadline(id, due);
  pending_.find(id)->poll =
      deadlines_.add(std::chrono::steady_clock::now() + after, [weak = weak_from_this(), id] {
        if (const auto self = weak.lock()) self->poll_task(id);
      });
  hooks_.status_changed();
}

void Session::poll_task(std::uint64_t id) {
  auto call = pending_.take(id);
  if (!call || stopped()) return;
  send_task_step(std::move(*call), "tasks/get", json::object());
}

// The conversation's next request, under a fresh id, within the call's own deadline.
void Session::send_task_step(PendingCall call, std::string_view method, json params) {
  params["taskId"] = call.task_id;
  std::string params_json = params.dump(-1, ' ', false, json::error_handler_t::replace);
  if (offers_ & ipc::offer::kStatelessOnly)
    require_stateless_meta(params_json, log_level_, /*askable=*/false, /*tasks=*/true);
  const auto due = call.deadline.at();
  call.poll.reset();
  const std::uint64_t id = pending_.renew(std::move(call));
  set_deadline(id, due);
  enqueue(R"({"id":)" + std::to_string(id) + R"(,"jsonrpc":"2.0","method":)" + json(method).dump() +
              R"(,"params":)" + params_json + "}",
          /*droppable=*/false);
  hooks_.status_changed();
}

void Session::end_task_conversation(PendingCall call, const json& response) {
  pending_.hold_until_delivered(call.call_id, call.caller);
  reply_written(call.call_id, response);
  hooks_.status_changed();
}

// A conversation is the worker's alone, like an ask: it cannot cross a switch in place. The
// task itself goes on at the computer; the caller asks for it again.
void Session::fail_task_conversations_before_parking() {
  std::vector<std::uint64_t> conversations;
  for (const auto& [id, call] : pending_.calls())
    if (call.task_step != TaskStep::kNone) conversations.push_back(id);
  for (const std::uint64_t id : conversations) {
    if (auto call = pending_.take(id)) {
      forget_routed(id);
      end_task_conversation(
          std::move(*call),
          json{{"error", error_of("the switchboard restarted while following the task; ask again")},
               {"jsonrpc", "2.0"}});
    }
  }
}

}  // namespace sb::worker
