#include "supervisor/mcp/input_bridge.hpp"

#include <utility>

#include "shared/jsonrpc.hpp"
#include "supervisor/mcp/log_levels.hpp"
#include "supervisor/metrics/metrics.hpp"

namespace sb::supervisor {
namespace {

using json = nlohmann::json;

// What a request from the computer needs its caller to have declared.
std::optional<std::string_view> capability_for(std::string_view method) {
  if (method == "elicitation/create") return "elicitation";
  if (method == "sampling/createMessage") return "sampling";
  if (method == "roots/list") return "roots";
  return std::nullopt;
}

json declared_capabilities(const Exchange& exchange) {
  const json* declared = exchange.meta_member("io.modelcontextprotocol/clientCapabilities");
  return declared && declared->is_object() ? *declared : json::object();
}

std::string cannot_be_asked(std::string_view method) {
  std::string message = "the caller of this call cannot be asked ";
  message += backticked(method);
  message += ": it did not declare that it can take it";
  return dump(json{{"error", {{"code", jsonrpc::kMethodNotFound}, {"message", message}}},
                   {"jsonrpc", "2.0"}});
}

std::string answer_of(const json& response) {
  if (response.is_object()) return dump(json{{"jsonrpc", "2.0"}, {"result", response}});
  return dump(json{{"error",
                    {{"code", jsonrpc::kInvalidParams},
                     {"message", "the caller's input response is not an object"}}},
                   {"jsonrpc", "2.0"}});
}

// `text` under another request's id: the retry's, not the first request's.
ReplyText with_request_id(ReplyText text, const json& id) {
  json reply = json::parse(text.head + text.body, nullptr, /*allow_exceptions=*/false);
  if (!reply.is_object()) return text;
  reply["id"] = id;
  text.head.clear();
  text.body = dump(reply);
  return text;
}

// Ends the current request with an input-required result asking what the computer asked.
// A full book refuses the questions to the computer instead.
void end_round(const std::shared_ptr<BridgedCall>& call, InputBook& book, WorkerRegistry& workers) {
  const auto state = book.open(call->owner, call);
  if (!state) {
    for (const auto& [input_key, asked] : call->asked)
      workers.answer(call->call_id, asked.key, cannot_be_asked(asked.request.value("method", "")));
    call->asked.clear();
    return;
  }
  call->round = InputBook::round_of(*state);
  json requests = json::object();
  for (const auto& [input_key, asked] : call->asked) requests[input_key] = asked.request;
  const json result{{"inputRequests", std::move(requests)},
                    {"requestState", *state},
                    {"resultType", "input_required"}};
  auto done = std::exchange(call->done, nullptr);
  call->on_message = nullptr;
  done(ReplyText{.body = dump(jsonrpc::result_response(call->request_id, result))});
}

}  // namespace

std::shared_ptr<BridgedCall> bridge_for(const Exchange& exchange, std::string_view method) {
  if (!exchange.stateless() || !exchange.request.done) return nullptr;
  if (!jsonrpc::may_be_input_required(method)) return nullptr;
  auto call = std::make_shared<BridgedCall>();
  call->owner = exchange.owner();
  call->method = std::string(method);
  call->first_id = exchange.id;
  call->request_id = exchange.id;
  call->declared = declared_capabilities(exchange);
  call->log_level = requested_log_level(exchange);
  call->done = exchange.request.done;
  call->on_message = exchange.request.on_message;
  return call;
}

McpDone bridged_done(std::shared_ptr<BridgedCall> call, InputBook& book) {
  return [call = std::move(call), &book](std::optional<ReplyText> text) {
    if (call->round) book.close(*std::exchange(call->round, std::nullopt));
    call->asked.clear();
    call->abandon = nullptr;
    call->on_message = nullptr;
    auto done = std::exchange(call->done, nullptr);
    if (!done) return;
    if (text && call->request_id != call->first_id)
      text = with_request_id(std::move(*text), call->request_id);
    done(std::move(text));
  };
}

MessageCallback bridged_sink(const Exchange& exchange, std::shared_ptr<BridgedCall> call) {
  return [call = std::move(call), &workers = exchange.services().workers,
          &book = exchange.services().inputs, &metrics = exchange.services().metrics,
          computer = exchange.context().computer](const ipc::MessageMeta& meta, std::string body) {
    if (meta.kind == ipc::MessageKind::kProgress) metrics.progress_routed(computer);
    if (meta.kind != ipc::MessageKind::kRequest) {
      if (call->on_message && stateless_caller_takes(body, call->log_level))
        call->on_message(ReplyText{.body = std::move(body)});
      return;
    }
    const json request = json::parse(body, nullptr, /*allow_exceptions=*/false);
    const auto method = request.is_object() ? request.find("method") : request.end();
    const std::string name =
        method != request.end() && method->is_string() ? method->get<std::string>() : "";
    const auto capability = capability_for(name);
    if (!capability || !call->declared.contains(*capability))
      return workers.answer(call->call_id, meta.key, cannot_be_asked(name));
    json asked{{"method", name}};
    if (const auto params = request.find("params"); params != request.end() && params->is_object())
      asked["params"] = *params;
    call->asked.emplace("sb" + std::to_string(meta.key),
                        BridgedCall::Asked{meta.key, std::move(asked)});
    if (call->done) end_round(call, book, workers);
  };
}

std::optional<Underway> take_up_round(const Exchange& exchange) {
  const std::string* state = exchange.params_string("requestState");
  if (!state || !InputBook::round_of(*state)) return std::nullopt;
  auto& workers = exchange.services().workers;
  auto& book = exchange.services().inputs;
  const auto call = book.take(*state, exchange.owner());
  const std::string* method = exchange.message.is_object() && exchange.message.contains("method")
                                  ? &exchange.message["method"].get_ref<const std::string&>()
                                  : nullptr;
  // Expired, another caller's, never issued, or for another method: all alike.
  if (!call || call->done || !method || *method != call->method) {
    return exchange.finish(jsonrpc::error_response(exchange.id, jsonrpc::kInvalidParams,
                                                   "requestState names no round of this caller"));
  }
  call->round.reset();
  const json* params = exchange.params();
  const auto responses = params->find("inputResponses");
  for (auto it = call->asked.begin(); it != call->asked.end();) {
    const bool answered =
        responses != params->end() && responses->is_object() && responses->contains(it->first);
    if (!answered) {
      ++it;
      continue;
    }
    workers.answer(call->call_id, it->second.key, answer_of(responses->at(it->first)));
    it = call->asked.erase(it);
  }
  call->request_id = exchange.id;
  call->declared = declared_capabilities(exchange);
  call->log_level = requested_log_level(exchange);
  call->done = exchange.request.done;
  call->on_message = exchange.request.on_message;
  if (!call->asked.empty()) end_round(call, book, workers);
  return Underway{[call] {
    call->done = nullptr;
    call->on_message = nullptr;
    if (auto abandon = std::exchange(call->abandon, nullptr)) abandon();
  }};
}

}  // namespace sb::supervisor
