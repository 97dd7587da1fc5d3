// Session's asks on behalf of a computer that speaks only 2026-07-28 (session.hpp;
// docs/protocol.md, "Input required"). Such a computer does not send a request during a call:
// it answers the call input-required, naming what it needs. When the call's caller takes
// messages, the worker asks each of those of it as the request a handshake-era computer
// would have sent, on the call's stream; once every answer is in, it retries the call with
// them. The supervisor sees one call throughout, and routes the requests and their answers
// as it does a handshake-era computer's.
#include <algorithm>
#include <utility>

#include "shared/jsonrpc.hpp"
#include "worker/session.hpp"

namespace sb::worker {
namespace {

// A computer that asks round after round is answered with an error instead: a tool asks a
// question or two.
constexpr int kMaxAskRounds = 8;

// Whether every request of `requests` can be asked: an object of objects with a string
// method, not empty.
bool askable(const json& requests) {
  if (!requests.is_object() || requests.empty()) return false;
  return std::all_of(requests.begin(), requests.end(), [](const json& request) {
    const auto method = request.is_object() ? request.find("method") : request.end();
    return method != request.end() && method->is_string();
  });
}

// The requests of an input-required result, when it is one whose every request can be asked;
// else null.
const json* askable_requests(const json& reply) {
  const auto result = reply.is_object() ? reply.find("result") : reply.end();
  if (result == reply.end() || !result->is_object()) return nullptr;
  if (result->value("resultType", json()) != "input_required") return nullptr;
  const auto requests = result->find("inputRequests");
  return requests != result->end() && askable(*requests) ? &*requests : nullptr;
}

json error_of(std::string message) {
  return json{{"code", jsonrpc::kInternalError}, {"message", std::move(message)}};
}

}  // namespace

// Takes `call`'s input-required reply over: true when its requests went to the caller and the
// call waits, under a fresh id, for the answers; false when the reply goes on as it is.
bool Session::ask_caller(PendingCall& call, std::string_view reply_text) {
  const json reply = json::parse(reply_text, nullptr, /*allow_exceptions=*/false);
  const json* requests = askable_requests(reply);
  if (!requests) return false;
  return ask_requests(call, *requests, reply["result"].value("requestState", json()));
}

// Asks each of `requests` of the call's caller, on its stream; the call waits under a fresh
// id for the answers (and, with the computer's `request_state`, is retried with them).
// False when they cannot be asked.
bool Session::ask_requests(PendingCall& call, const json& requests, json request_state) {
  if (!askable(requests)) return false;
  if (routed_.size() + requests.size() > kMaxRoutedRequests || ++call.ask_rounds > kMaxAskRounds) {
    const std::uint64_t id = pending_.renew(std::move(call));
    end_asked(id, error_of("the computer asked its caller more than this call allows"));
    return true;
  }
  const std::uint64_t id = pending_.renew(std::move(call));
  const PendingCall& renewed = *pending_.find(id);
  AskRound& round = asking_[id];
  round.request_state = std::move(request_state);
  for (const auto& [input_key, request] : requests.items()) {
    const std::uint64_t key = next_route_key_++;
    routed_.emplace(key, RoutedRequest{.pending_id = id, .input_key = input_key});
    json asked{{"jsonrpc", "2.0"}, {"method", request["method"]}};
    if (const auto params = request.find("params"); params != request.end())
      asked["params"] = *params;
    ++round.waiting;
    hooks_.message(renewed.call_id, ipc::MessageMeta{ipc::MessageKind::kRequest, key},
                   asked.dump());
  }
  arm_deadline(id, renewed.timeout);
  hooks_.status_changed();
  return true;
}

// The caller's answer to one of the requests: kept for the retry, which goes once the last
// is in. An error ends the call with it: an input-required retry carries only results.
void Session::answer_asked(std::uint64_t key, std::string_view response_without_id) {
  const auto route = routed_.find(key);
  if (route == routed_.end()) return;
  const std::uint64_t id = route->second.pending_id;
  const std::string input_key = std::move(route->second.input_key);
  routed_.erase(route);
  const auto round = asking_.find(id);
  if (round == asking_.end()) return;
  const json answer = json::parse(response_without_id, nullptr, /*allow_exceptions=*/false);
  const auto result = answer.is_object() ? answer.find("result") : answer.end();
  if (result == answer.end() || !result->is_object()) {
    const auto error = answer.is_object() ? answer.find("error") : answer.end();
    return end_asked(id, error != answer.end() && error->is_object()
                             ? *error
                             : error_of("the caller's answer is not a result"));
  }
  round->second.answers[input_key] = *result;
  if (--round->second.waiting == 0) retry_asked(id);
}

// The call again, as first sent, with the caller's answers and the computer's state; for
// a task, the answers sent with tasks/update.
void Session::retry_asked(std::uint64_t id) {
  const auto round = asking_.find(id);
  PendingCall* call = pending_.find(id);
  if (round == asking_.end() || !call) return;
  if (call->task_step == TaskStep::kPoll) {
    json answers = std::move(round->second.answers);
    asking_.erase(round);
    auto taken = pending_.take(id);
    taken->task_step = TaskStep::kUpdate;
    return send_task_step(std::move(*taken), "tasks/update",
                          json{{"inputResponses", std::move(answers)}});
  }
  json params = json::parse(call->ask_params, nullptr, /*allow_exceptions=*/false);
  params["inputResponses"] = std::move(round->second.answers);
  if (!round->second.request_state.is_null())
    params["requestState"] = std::move(round->second.request_state);
  asking_.erase(round);
  const json request{
      {"id", id}, {"jsonrpc", "2.0"}, {"method", call->ask_method}, {"params", std::move(params)}};
  enqueue(request.dump(-1, ' ', false, json::error_handler_t::replace), /*droppable=*/false);
}

// The call ends with `error` as the computer's reply; nothing of it is at the computer.
void Session::end_asked(std::uint64_t id, const json& error) {
  auto call = pending_.take(id);
  if (!call) return;
  forget_routed(id);
  pending_.hold_until_delivered(call->call_id, call->caller);
  reply_written(call->call_id, json{{"error", error}, {"jsonrpc", "2.0"}});
  hooks_.status_changed();
}

// A round's answers and the call they belong to are the worker's alone: they cannot cross a
// switch in place, so each such call ends before the session is parked.
void Session::fail_asks_before_parking() {
  while (!asking_.empty()) {
    end_asked(asking_.begin()->first,
              error_of("the switchboard restarted while the caller was being asked; call again"));
  }
}

}  // namespace sb::worker
