#include "supervisor/mcp/forward.hpp"

#include <memory>

#include "base/unix_time.hpp"
#include "ipc/messages.hpp"
#include "shared/jsonrpc.hpp"
#include "supervisor/mcp/input_bridge.hpp"
#include "supervisor/mcp/log_levels.hpp"
#include "supervisor/mcp/reply_text.hpp"
#include "supervisor/mcp/result_shape.hpp"
#include "supervisor/metrics/metrics.hpp"

namespace sb::supervisor {
namespace {

using json = nlohmann::json;

// JSON-RPC code for a request its caller cancelled (the code MCP SDKs use for it).
constexpr int kRequestCancelled = -32800;
constexpr std::size_t kMaxReasonBytes = 512;

// A reply waits in memory for its caller only within the reply budget; past it, the
// caller is told the switchboard is overloaded and other callers are served as before.
ReplyBudget::Lease admit_reply(ReplyBudget& budget, CallResult& result) {
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

// How a call the worker answered without the computer's reply ended, for its span.
std::string_view round_trip_error_of(ipc::CallStatus status) {
  switch (status) {
    case ipc::CallStatus::kTimeout:
      return round_trip_error::kTimeout;
    case ipc::CallStatus::kDisconnected:
      return round_trip_error::kDisconnected;
    default:
      return {};  // answered, or refused before it was sent
  }
}

// The answer to a request from the computer that its caller cannot be asked.
constexpr std::string_view kCannotBeAsked =
    R"({"error":{"code":-32601,"message":"the caller of this call cannot be asked: its )"
    R"(protocol revision (2026-07-28) has no requests from the server"},"jsonrpc":"2.0"})";

// Messages during the call, for a caller that takes them: a request from the computer gets
// an id of the switchboard's, by which the caller's answer finds it. A 2026-07-28 caller's
// revision has no requests from the server (docs/protocol.md, "Requests from the
// computer"): the computer is told so, and the caller's stream carries what it has.
MessageCallback message_sink(const Exchange& exchange, std::shared_ptr<std::uint64_t> entry,
                             std::shared_ptr<std::uint64_t> call_id) {
  if (!exchange.request.on_message) return {};
  const bool stateless = exchange.stateless();
  return [&book = exchange.services().calls, &metrics = exchange.services().metrics,
          &workers = exchange.services().workers, computer = exchange.context().computer, entry,
          call_id, stateless, log_level = requested_log_level(exchange),
          sink = exchange.request.on_message](const ipc::MessageMeta& meta, std::string body) {
    if (meta.kind == ipc::MessageKind::kProgress) metrics.progress_routed(computer);
    if (meta.kind != ipc::MessageKind::kRequest) {
      if (stateless && !stateless_caller_takes(body, log_level)) return;
      return sink(ReplyText{.body = std::move(body)});
    }
    if (stateless) return workers.answer(*call_id, meta.key, std::string(kCannotBeAsked));
    const auto routed_id = book.route_request(*entry, meta.key);
    if (routed_id) sink(with_id_text(*routed_id, std::move(body)));
  };
}

}  // namespace

Underway forward(const Exchange& exchange, CallRequest request,
                 std::function<ReplyText(CallResult)> reply,
                 std::function<void(std::string_view outcome)> ended_early) {
  auto& book = exchange.services().calls;
  auto& workers = exchange.services().workers;
  if (!ended_early) ended_early = [](std::string_view) {};
  request.max_total = std::chrono::seconds(exchange.config().timeouts.max_total_secs);
  const CallerContext& context = exchange.context();
  request.carried = context.carried;
  const auto started =
      context.carried ? context.carried->started : std::chrono::steady_clock::now();
  const bool stateless = exchange.stateless();
  if (stateless || exchange.computer_speaks_only_stateless()) {
    // A caller gets its own revision's members whatever the computer speaks
    // (docs/protocol.md, "Eras"): a 2026-07-28 caller those a computer of an older revision
    // does not write, an older caller none of those a 2026-only computer writes. The reply
    // is read whole to be shaped.
    request.reply_may_arrive = false;
    reply = [reply = std::move(reply), method = request.method,
             era = context.era](CallResult result) {
      if (result.status == ipc::CallStatus::kReplied)
        shape_reply(result.reply_without_id, method, era);
      return reply(std::move(result));
    };
  }
  auto entry = std::make_shared<std::uint64_t>(0);
  auto forwarded_id = std::make_shared<std::uint64_t>(0);
  // A 2026-07-28 caller is asked by input-required results (docs/protocol.md, "Input
  // required"); other callers on their stream.
  const auto bridge = stateless ? bridge_for(exchange, request.method) : nullptr;
  request.on_message =
      bridge ? bridged_sink(exchange, bridge) : message_sink(exchange, entry, forwarded_id);
  const McpDone done =
      bridge ? bridged_done(bridge, exchange.services().inputs) : exchange.request.done;
  const std::uint64_t forwarded_at = unix_nanos_now();
  const std::uint64_t call_id = workers.forward(
      exchange.context().computer, std::move(request),
      [&book, &budget = exchange.services().replies, entry, reply, done,
       forwarded_at](CallResult result) {
        book.close(*entry);
        const RoundTrip round_trip{.forwarded = forwarded_at,
                                   .sent = result.sent_unix_nanos,
                                   .first_byte = result.first_byte_unix_nanos,
                                   .replied = result.replied_unix_nanos,
                                   .returned = unix_nanos_now(),
                                   .error_type = round_trip_error_of(result.status)};
        auto lease = admit_reply(budget, result);
        ReplyText text = reply(std::move(result));
        text.lease = std::move(lease);
        text.round_trip = round_trip;
        done(std::move(text));
      });
  if (call_id == 0) return {};
  *forwarded_id = call_id;
  if (bridge) bridge->call_id = call_id;
  *entry = book.open(exchange.owner(), dump(exchange.id), call_id,
                     [&workers, call_id, ended_early, id = exchange.id, done,
                      forwarded_at](const std::string& reason) {
                       workers.cancel(call_id, reason);
                       ended_early("cancelled");
                       done(ReplyText{.body = dump(jsonrpc::error_response(id, kRequestCancelled,
                                                                           "request cancelled")),
                                      .error_code = kRequestCancelled,
                                      .round_trip = {.forwarded = forwarded_at,
                                                     .returned = unix_nanos_now(),
                                                     .error_type = round_trip_error::kCancelled}});
                     });
  std::function<void()> abandon = [&book, &workers, entry, call_id, ended_early] {
    book.close(*entry);
    workers.cancel(call_id, "caller disconnected");
    ended_early("abandoned");
  };
  if (bridge) bridge->abandon = abandon;
  // A switch carries the call with its caller's connection (docs/architecture.md,
  // "Switching").
  return Underway{.abandon = std::move(abandon),
                  .call = CarriedCall{.call_id = call_id, .started = started},
                  .forwarded_unix_nanos = forwarded_at};
}

CallRequest request_to_computer(const Exchange& exchange, std::string method, int timeout_secs) {
  return CallRequest{.caller = exchange.context().caller,
                     .caller_cap = exchange.context().caller_cap,
                     .timeout = std::chrono::seconds(timeout_secs),
                     .method = std::move(method),
                     .params_json = exchange.params_text()};
}

void cancel_call(const Exchange& exchange) {
  const json* params = exchange.params();
  if (!params) return;
  const auto request_id = params->find("requestId");
  if (request_id == params->end()) return;
  const auto reason = params->find("reason");
  std::string why = reason != params->end() && reason->is_string()
                        ? reason->get<std::string>()
                        : std::string("cancelled by the caller");
  // It crosses in a frame's meta, which a request's body could outgrow.
  if (why.size() > kMaxReasonBytes) {
    std::size_t end = kMaxReasonBytes;
    while (end > 0 && (static_cast<unsigned char>(why[end]) & 0xC0) == 0x80) --end;
    why.resize(end);
  }
  exchange.services().calls.cancel(exchange.owner(), dump(*request_id), why);
}

Underway answer_routed_request(const Exchange& exchange) {
  const auto answer = exchange.services().calls.take_answer(exchange.owner(), dump(exchange.id));
  if (answer) {
    const json& message = exchange.message;
    json response{{"jsonrpc", "2.0"}};
    if (const auto result = message.find("result"); result != message.end()) {
      response["result"] = *result;
    } else {
      response["error"] = message.at("error");
    }
    exchange.services().workers.answer(answer->call_id, answer->key, dump(response));
  }
  return exchange.swallow();
}

}  // namespace sb::supervisor
