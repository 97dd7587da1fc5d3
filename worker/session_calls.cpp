// Session's calls and replies (session.hpp): forwarding a caller's request with its id and
// progress token rewritten, deadlines and cancellation, the computer's replies, and the
// requests and notifications it sends on its own.
#include <algorithm>
#include <utility>

#include "base/unix_time.hpp"
#include "shared/jsonrpc.hpp"
#include "worker/session.hpp"
#include "worker/stateless_revision.hpp"

namespace sb::worker {
namespace {

// Puts `token` (unique on this socket) in place of the caller's params._meta.progressToken
// and returns the caller's token as JSON text, or "" when the call has none. Only a call
// that mentions a token at all pays for a parse.
std::string take_progress_token(std::string& params_json, std::uint64_t token) {
  if (params_json.find("progressToken") == std::string::npos) return {};
  json params = json::parse(params_json, nullptr, /*allow_exceptions=*/false);
  if (!params.is_object()) return {};
  const auto meta = params.find("_meta");
  if (meta == params.end() || !meta->is_object()) return {};
  const auto found = meta->find("progressToken");
  if (found == meta->end() || !(found->is_string() || found->is_number_integer())) return {};
  std::string callers = found->dump();
  *found = token;
  params_json = params.dump();
  return callers;
}

}  // namespace

void Session::forward(ForwardedCall forwarded) {
  const std::uint64_t call_id = forwarded.call_id;
  if (phase_ != Phase::kReady) return reply_status(call_id, ipc::CallStatus::kNotAttached);
  // 2026-07-28 has no logging/setLevel: the level goes on each request instead.
  if ((offers_ & ipc::offer::kStatelessOnly) && forwarded.method == "logging/setLevel") {
    log_level_ = log_level_of(forwarded.params_json);
    return reply_written(call_id, jsonrpc::result_response(nullptr, json::object()));
  }
  if (keeps_listen(forwarded)) return change_listen(std::move(forwarded));
  if (forwarded.method == "tasks/update" && !(offers_ & ipc::offer::kStatelessOnly) &&
      answer_task_questions(forwarded))
    return;
  PendingCall call{.call_id = call_id,
                   .caller = std::move(forwarded.caller),
                   .stream = forwarded.stream,
                   .timeout = forwarded.timeout,
                   .last_moment = std::chrono::steady_clock::now() + forwarded.max_total};
  const auto id = pending_.add(std::move(call), forwarded.caller_cap);
  if (!id) return reply_status(call_id, ipc::CallStatus::kOverloaded);
  PendingCall& pending = *pending_.find(*id);
  std::string params = std::move(forwarded.params_json);
  pending.progress_token = take_progress_token(params, *id);
  std::string method = std::move(forwarded.method);
  begin_task_conversation(pending, method, params);
  if (offers_ & ipc::offer::kStatelessOnly) {
    // A caller that takes messages can be asked what the computer asks in an input-required
    // result, on a method that may have one; one of 2026-07-28 declares for itself.
    const bool askable = pending.stream && jsonrpc::may_be_input_required(method);
    const bool tasks = method.starts_with("tasks/") ||
                       (method == "tools/call" && params.find(R"("task")") != std::string::npos);
    if (require_stateless_meta(params, log_level_, askable, tasks)) {
      pending.ask_method = method;
      pending.ask_params = params;
    }
  }
  if (!(offers_ & ipc::offer::kStatelessOnly)) follow_request_log_level(method, params);
  arm_deadline(*id, forwarded.timeout);
  pending.sent_unix_nanos = unix_nanos_now();
  std::string frame = R"({"id":)" + std::to_string(*id) + R"(,"jsonrpc":"2.0","method":)" +
                      json(method).dump() + R"(,"params":)" + params + "}";
  enqueue(std::move(frame), /*droppable=*/false);
  hooks_.status_changed();
}

void Session::cancel(std::uint64_t call_id, const std::string& reason) {
  const auto id = pending_.find_by_call_id(call_id);
  if (!id) return;
  end_early(*id, reason);  // its late reply will find no entry and be dropped
}

void Session::delivered(std::uint64_t call_id) {
  pending_.delivered(call_id);
  hooks_.status_changed();
}

void Session::answer(std::uint64_t call_id, std::uint64_t key,
                     std::string_view response_without_id) {
  const auto found = routed_.find(key);
  if (found == routed_.end()) return;
  const PendingCall* call = pending_.find(found->second.pending_id);
  if (!call || call->call_id != call_id) return;
  if (!found->second.input_key.empty()) return answer_asked(key, response_without_id);
  // The supervisor sends {"jsonrpc":"2.0","result"|"error":...}: the id goes in front.
  if (response_without_id.size() < 3 || response_without_id.front() != '{') return;
  std::string frame =
      R"({"id":)" + found->second.original_id + "," + std::string(response_without_id.substr(1));
  routed_.erase(found);
  enqueue(std::move(frame), /*droppable=*/false);
}

void Session::fail_all_pending() {
  routed_.clear();
  asking_.clear();
  task_watches_.clear();
  for (auto& call : pending_.take_all()) {
    if (!call.handshake)
      reply_status(call.call_id, ipc::CallStatus::kDisconnected, call.sent_unix_nanos);
  }
}

// A call ends before its reply: its share is free now, and the computer is told to stop
// working on it (docs/protocol.md, "Cancellation").
void Session::end_early(std::uint64_t id, std::string_view reason) {
  auto call = pending_.take(id);
  if (!call) return;
  forget_routed(id);
  hooks_.status_changed();
  const json notification{{"jsonrpc", "2.0"},
                          {"method", "notifications/cancelled"},
                          {"params", {{"requestId", id}, {"reason", reason}}}};
  enqueue(notification.dump(), /*droppable=*/true);
}

void Session::forget_routed(std::uint64_t pending_id) {
  std::erase_if(routed_, [&](const auto& entry) { return entry.second.pending_id == pending_id; });
  asking_.erase(pending_id);
}

void Session::handle_message(std::string_view text) {
  const auto scanned = scan_message(text, jsonrpc::kMaxNesting);
  if (!scanned) return refuse_frame();
  if (scanned->is_response) return handle_response(*scanned, text);
  // Requests and notifications from the computer are rare and small, so the tree is built
  // after all.
  json message = json::parse(text, nullptr, /*allow_exceptions=*/false);
  const auto method = message.find("method");
  if (method == message.end() || !method->is_string()) return refuse_frame();
  if (scanned->has_id) return handle_request_from_computer(*scanned, text, message);
  std::string name = method->get<std::string>();
  handle_notification(name, std::move(message));
}

// Two messages in one frame, a bare array, a scalar: refused, and the calls it might
// have answered keep waiting for a proper reply.
void Session::refuse_frame() {
  if (const auto count = refused_frames_.due()) {
    log_warn("computer sent a frame that is not exactly one JSON-RPC message; refused",
             {{"computer", settings_.computer}, {"count", std::to_string(*count)}});
  }
}

// A reply no call waits for: late (its call timed out or was cancelled), repeated, or
// for an id the switchboard never sent. Dropped, and counted in the log.
void Session::drop_stray_reply() {
  if (const auto count = stray_replies_.due()) {
    log_warn("computer sent a reply no call waits for (late, repeated or unknown id); dropped",
             {{"computer", settings_.computer}, {"count", std::to_string(*count)}});
  }
}

void Session::handle_notification(const std::string& method, json message) {
  if (method == "notifications/progress") return relay_progress(std::move(message));
  if ((offers_ & ipc::offer::kStatelessOnly) && take_listen_message(method, message)) return;
  // A task's owner, a resource's subscribers and who listens for list changes are known to
  // the supervisor alone; call id 0 names no call.
  if (method == "notifications/tasks/status" || method == "notifications/resources/updated" ||
      method == "notifications/tools/list_changed" ||
      method == "notifications/prompts/list_changed") {
    return hooks_.message(0, ipc::MessageMeta{ipc::MessageKind::kNotification}, message.dump());
  }
  // No token or id names a caller: only when one client can reach the computer at all
  // may such a message go to a caller, its newest call's.
  const auto newest = pending_.newest_call();
  const PendingCall* call = newest ? pending_.find(*newest) : nullptr;
  if (!settings_.sole_caller || !call || !call->stream) return drop_message(method);
  hooks_.message(call->call_id, ipc::MessageMeta{ipc::MessageKind::kNotification}, message.dump());
}

void Session::relay_progress(json message) {
  const auto params = message.find("params");
  if (params == message.end() || !params->is_object())
    return drop_message("notifications/progress");
  const auto token = params->find("progressToken");
  PendingCall* call = nullptr;
  if (token != params->end() && token->is_number_unsigned()) {
    const auto id = token->get<std::uint64_t>();
    call = pending_.find(id);
    if (call && !call->progress_token.empty()) restart_deadline(*call);
  }
  if (!call || call->progress_token.empty()) return drop_message("notifications/progress");
  // Sent even when the caller cannot take it: the supervisor's backstop restarts too.
  *token = json::parse(call->progress_token);
  hooks_.message(call->call_id, ipc::MessageMeta{ipc::MessageKind::kProgress}, message.dump());
}

void Session::drop_message(std::string_view method) {
  if (hooks_.message_dropped) hooks_.message_dropped();
  if (const auto count = dropped_messages_.due()) {
    log_info("dropped messages from the computer that no caller could take",
             {{"computer", settings_.computer},
              {"method", std::string(method)},
              {"count", std::to_string(*count)}});
  }
}

// 2026-07-28 names a log level on each request; a handshake-era computer keeps one per
// socket (docs/protocol.md, "Eras"). Where one client alone can reach the computer (the only
// one its log messages may go to), the computer is set to the level a request names when it
// differs from the one set last, before the request goes.
void Session::follow_request_log_level(std::string_view method, std::string_view params) {
  if (method == "logging/setLevel") {
    computer_log_level_ = log_level_of(params);
    return;
  }
  if (!(offers_ & ipc::offer::kLogging) || !settings_.sole_caller) return;
  std::string level = requested_log_level(params);
  if (level.empty() || level == computer_log_level_) return;
  constexpr std::size_t kQuietReplies = 16;
  const std::uint64_t id = pending_.reserve_id();
  quiet_replies_.push_back(id);
  if (quiet_replies_.size() > kQuietReplies) quiet_replies_.pop_front();
  enqueue(R"({"id":)" + std::to_string(id) +
              R"(,"jsonrpc":"2.0","method":"logging/setLevel","params":{"level":)" +
              json(level).dump() + "}}",
          /*droppable=*/false);
  computer_log_level_ = std::move(level);
}

// Whether `id` was one of the worker's own requests whose answer nobody waits for.
bool Session::take_quiet_reply(std::uint64_t id) {
  const auto found = std::find(quiet_replies_.begin(), quiet_replies_.end(), id);
  if (found == quiet_replies_.end()) return false;
  quiet_replies_.erase(found);
  return true;
}

void Session::handle_response(const ScannedMessage& scanned, std::string_view text) {
  auto call = scanned.id ? pending_.take(*scanned.id) : std::nullopt;
  if (!call && scanned.id && (take_quiet_reply(*scanned.id) || end_task_watch(*scanned.id))) return;
  if (!call) return drop_stray_reply();
  forget_routed(*scanned.id);
  hooks_.status_changed();
  if (call->handshake) return on_handshake_reply(json::parse(text, nullptr, false));
  if (call->task_step != TaskStep::kNone && follow_task(*call, text)) return;
  if (!call->ask_method.empty() && ask_caller(*call, text)) return;
  ipc::CallOutcome outcome{.status = ipc::CallStatus::kReplied,
                           .response_bytes = text.size(),
                           .kind = scanned.kind,
                           .error_code = scanned.error_code,
                           .sent_unix_nanos = call->sent_unix_nanos,
                           .first_byte_unix_nanos = ws_.next_layer().message_began_unix_nanos(),
                           .replied_unix_nanos = unix_nanos_now()};
  // The reply may wait in the supervisor for a slow caller: until it has left, the call
  // keeps its place, so that max_inflight bounds replies held as well as calls running.
  pending_.hold_until_delivered(call->call_id, call->caller);
  hooks_.reply(call->call_id, outcome, without_id(text, scanned));
}

// A request goes to a caller only when its owner is certain: a server asks while it
// serves a request, so with exactly one call in flight it is that call's.
void Session::handle_request_from_computer(const ScannedMessage& scanned, std::string_view text,
                                           const json& message) {
  const json& id = message.at("id");
  if (message.at("method") == "ping") {
    return enqueue(jsonrpc::result_response(id, json::object()).dump(), /*droppable=*/true);
  }
  if (hold_task_question(message)) return;
  const auto only = pending_.only_call();
  const PendingCall* call = only ? pending_.find(*only) : nullptr;
  if (!call || !call->stream || routed_.size() >= kMaxRoutedRequests) {
    const auto refusal =
        jsonrpc::error_response(id, jsonrpc::kMethodNotFound, "no caller can answer this request");
    return enqueue(refusal.dump(), /*droppable=*/true);
  }
  const std::uint64_t key = next_route_key_++;
  routed_.emplace(key, RoutedRequest{*only, id.dump()});
  hooks_.message(call->call_id, ipc::MessageMeta{ipc::MessageKind::kRequest, key},
                 without_id(text, scanned));
}

void Session::arm_deadline(std::uint64_t id, std::chrono::milliseconds timeout) {
  const PendingCall* call = pending_.find(id);
  const auto now = std::chrono::steady_clock::now();
  set_deadline(id, call->handshake ? now + timeout : std::min(now + timeout, call->last_moment));
}

void Session::set_deadline(std::uint64_t id, std::chrono::steady_clock::time_point at) {
  // The deadline lives in the table: taking the entry withdraws it.
  pending_.find(id)->deadline = deadlines_.add(at, [weak = weak_from_this(), id] {
    if (const auto self = weak.lock()) self->on_deadline(id);
  });
}

// Progress shows the computer is still at work: the call gets its whole timeout again,
// but never past the moment its max_total allows.
void Session::restart_deadline(PendingCall& call) {
  call.deadline.move_to(
      std::min(std::chrono::steady_clock::now() + call.timeout, call.last_moment));
}

void Session::on_deadline(std::uint64_t id) {
  PendingCall* call = pending_.find(id);
  if (!call) return;
  if (call->handshake) {
    pending_.take(id);
    hooks_.status_changed();
    if (stopped()) return;
    log_warn("initialize toward the computer failed",
             {{"peer", settings_.peer}, {"error", "no answer within 15 s"}});
    return close(close_code::kHandshakeFailed);
  }
  const std::uint64_t call_id = call->call_id;
  const std::uint64_t sent = call->sent_unix_nanos;
  end_early(id, "timed out");
  reply_status(call_id, ipc::CallStatus::kTimeout, sent);
}

void Session::reply_status(std::uint64_t call_id, ipc::CallStatus status,
                           std::uint64_t sent_unix_nanos) {
  hooks_.reply(call_id, ipc::CallOutcome{.status = status, .sent_unix_nanos = sent_unix_nanos},
               std::string());
}

void Session::reply_written(std::uint64_t call_id, const json& response) {
  json body = response;
  body.erase("id");
  std::string text = body.dump();
  ipc::CallOutcome outcome{ipc::CallStatus::kReplied, text.size()};
  if (const auto error = body.find("error"); error != body.end() && error->is_object()) {
    outcome.kind = ipc::ReplyKind::kRpcError;
    if (const auto code = error->find("code"); code != error->end() && code->is_number_integer())
      outcome.error_code = code->get<std::int64_t>();
  }
  hooks_.reply(call_id, outcome, std::move(text));
}

}  // namespace sb::worker
