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
//   by tasks/result, whose result (or error) goes into the task, where that revision has it;
//   of a task that asks, the worker calls tasks/result to hear the questions (below).
// The members of each revision's shapes are renamed by the supervisor (supervisor/mcp/
// result_shape.*); here only the steps are taken.
#include <algorithm>
#include <optional>
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
      if (result.contains("resultType") || result.contains("result") || result.contains("error"))
        return false;
      if (result.value("status", json()) == "input_required") {
        json task = watch_task(call, result);
        end_task_conversation(std::move(call),
                              json{{"jsonrpc", "2.0"}, {"result", std::move(task)}});
        return true;
      }
      if (!ended(result)) return false;
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

// ---- a handshake-era computer's task that asks, for a 2026-07-28 caller ----
//
// Such a computer asks through tasks/result, which a 2026-07-28 caller never calls. When
// that caller's tasks/get shows the task input_required, the worker calls tasks/result for
// it (once per task) and holds what the computer asks on it, marked as the task's
// (`_meta["io.modelcontextprotocol/related-task"]`); the next tasks/get shows those as the
// task's inputRequests, and the caller's tasks/update answers them. The watch ends with the
// tasks/result's answer (the result is fetched again once tasks/get shows the task ended),
// or when no tasks/get has come for as long as a call may last.

namespace {

constexpr std::size_t kMaxTaskWatches = 64;

std::optional<std::string> related_task(const json& message) {
  const auto params = message.find("params");
  if (params == message.end() || !params->is_object()) return std::nullopt;
  const json::json_pointer task("/_meta/io.modelcontextprotocol~1related-task/taskId");
  if (!params->contains(task) || !params->at(task).is_string()) return std::nullopt;
  return params->at(task).get<std::string>();
}

}  // namespace

// The task of a 2026-07-28 caller's tasks/get, shown input_required: watched from now on,
// with the questions held for it.
json Session::watch_task(const PendingCall& call, json task) {
  auto found = task_watches_.find(call.task_id);
  if (found == task_watches_.end()) {
    if (task_watches_.size() >= kMaxTaskWatches) return task;
    found = task_watches_.emplace(call.task_id, TaskWatch{}).first;
    TaskWatch& watch = found->second;
    watch.result_id = pending_.reserve_id();
    enqueue(R"({"id":)" + std::to_string(watch.result_id) +
                R"(,"jsonrpc":"2.0","method":"tasks/result","params":{"taskId":)" +
                json(call.task_id).dump() + "}}",
            /*droppable=*/false);
  }
  TaskWatch& watch = found->second;
  watch.expiry = deadlines_.add(call.last_moment, [weak = weak_from_this(), id = call.task_id] {
    if (const auto self = weak.lock()) self->drop_task_watch(id, "nobody answered in time");
  });
  if (watch.questions.empty()) return task;
  json requests = json::object();
  for (const auto& [key, question] : watch.questions) requests[key] = question.request;
  task["inputRequests"] = std::move(requests);
  return task;
}

// A request from the computer about a watched task: held for the caller's tasks/update.
bool Session::hold_task_question(const json& message) {
  const auto task_id = related_task(message);
  const auto watch = task_id ? task_watches_.find(*task_id) : task_watches_.end();
  if (watch == task_watches_.end()) return false;
  if (watch->second.questions.size() >= kMaxRoutedRequests) return false;
  json request{{"method", message.at("method")}};
  if (const auto params = message.find("params"); params != message.end())
    request["params"] = *params;
  watch->second.questions.emplace("sb" + std::to_string(next_question_key_++),
                                  TaskQuestion{message.at("id").dump(), std::move(request)});
  return true;
}

// A 2026-07-28 caller's tasks/update of a watched task: each answer to a held question goes
// to the computer as the response to its request (an answer that is not an object as an
// error), and the caller is answered empty.
bool Session::answer_task_questions(const ForwardedCall& forwarded) {
  const json params = json::parse(forwarded.params_json, nullptr, /*allow_exceptions=*/false);
  const auto task_id = params.is_object() ? params.find("taskId") : params.end();
  if (task_id == params.end() || !task_id->is_string()) return false;
  const auto watch = task_watches_.find(task_id->get_ref<const std::string&>());
  if (watch == task_watches_.end()) return false;
  const auto responses = params.find("inputResponses");
  if (responses != params.end() && responses->is_object()) {
    for (const auto& [key, answer] : responses->items()) {
      const auto question = watch->second.questions.find(key);
      if (question == watch->second.questions.end()) continue;  // not asked (any more)
      const json body = answer.is_object()
                            ? json{{"result", answer}}
                            : json{{"error",
                                    {{"code", jsonrpc::kInvalidParams},
                                     {"message", "the caller's answer is not an object"}}}};
      enqueue(R"({"id":)" + question->second.computer_id + R"(,"jsonrpc":"2.0",)" +
                  body.dump(-1, ' ', false, json::error_handler_t::replace).substr(1),
              /*droppable=*/false);
      watch->second.questions.erase(question);
    }
  }
  reply_written(forwarded.call_id, jsonrpc::result_response(nullptr, json::object()));
  return true;
}

// The answer to a watch's tasks/result: the watch is over (the result is fetched again when
// the caller's tasks/get shows the task ended).
bool Session::end_task_watch(std::uint64_t result_id) {
  const auto watch =
      std::find_if(task_watches_.begin(), task_watches_.end(),
                   [&](const auto& entry) { return entry.second.result_id == result_id; });
  if (watch == task_watches_.end()) return false;
  drop_task_watch(watch->first, "the task has ended");
  return true;
}

// Ends a watch; what the computer still asks in it is answered with an error.
void Session::drop_task_watch(const std::string& task_id, std::string_view why) {
  const auto watch = task_watches_.find(task_id);
  if (watch == task_watches_.end()) return;
  for (const auto& [key, question] : watch->second.questions) {
    const json error{{"code", jsonrpc::kInternalError}, {"message", std::string(why)}};
    enqueue(
        R"({"id":)" + question.computer_id + R"(,"jsonrpc":"2.0","error":)" + error.dump() + "}",
        /*droppable=*/true);
  }
  task_watches_.erase(watch);
}

// A conversation is the worker's alone, like an ask: it cannot cross a switch in place. The
// task itself goes on at the computer; the caller asks for it again.
void Session::fail_task_conversations_before_parking() {
  std::vector<std::uint64_t> conversations;
  for (const auto& [id, call] : pending_.calls())
    if (call.task_step != TaskStep::kNone) conversations.push_back(id);
  while (!task_watches_.empty())
    drop_task_watch(task_watches_.begin()->first, "the switchboard restarted");
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
