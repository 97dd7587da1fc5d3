// The registry's calls: forwarding with a backstop deadline, cancel, answers to a
// computer's requests, and the replies and messages that come back (registry.hpp).
#include "ipc/supervisor_frames.hpp"
#include "supervisor/workers/calls_in_flight.hpp"
#include "supervisor/workers/registry.hpp"
#include "supervisor/workers/worker.hpp"

namespace sb::supervisor {

std::uint64_t WorkerRegistry::forward(std::string_view computer, CallRequest request,
                                      CallCallback done) {
  const auto worker = find(computer);
  if (request.carried) return take_up_call(worker, std::move(request), std::move(done));
  const bool waits = worker && worker->awaiting_take_up();
  if (waits && !worker->room_to_hold()) {
    done(CallResult{ipc::CallStatus::kOverloaded, 0, {}});
    return 0;
  }
  if (!waits && (!worker || !worker->channel() || !worker->view(timings_.heartbeat_stale).ready)) {
    done(CallResult{ipc::CallStatus::kNotAttached, 0, {}});
    return 0;
  }
  const std::uint64_t call_id = next_call_id_++;
  const auto now = std::chrono::steady_clock::now();
  InFlightCall call{.done = std::move(done),
                    .on_message = std::move(request.on_message),
                    .timeout = request.timeout,
                    .last_moment = now + request.max_total,
                    .reply_may_arrive = request.reply_may_arrive};
  const bool stream = static_cast<bool>(call.on_message);
  in_flight_->add(call_id, worker, std::move(call));
  arm_backstop(*worker, call_id);
  auto frame = ipc::encode(ipc::Call{.call_id = call_id,
                                     .meta = {.caller = request.caller,
                                              .caller_cap = request.caller_cap,
                                              .timeout = request.timeout,
                                              .max_total = request.max_total,
                                              .method = request.method,
                                              .stream = stream},
                                     .params = std::move(request.params_json)});
  if (waits) {
    worker->hold(std::move(frame));
  } else {
    worker->send(std::move(frame));
  }
  return call_id;
}

// A stalled worker costs its own callers a timeout and nobody else anything. The backstop
// fires a grace period after the worker's own deadline would have.
void WorkerRegistry::arm_backstop(const Worker& worker, std::uint64_t call_id) {
  InFlightCall* call = in_flight_->find(call_id, worker);
  if (!call) return;
  const auto at = std::min(std::chrono::steady_clock::now() + call->timeout, call->last_moment) +
                  timings_.backstop_grace;
  if (call->backstop.pending()) return call->backstop.move_to(at);
  call->backstop = backstops_.add(at, [this, call_id] {
    const auto worker = in_flight_->owner_of(call_id);
    auto late = in_flight_->take(call_id);
    if (!late) return;
    if (worker) worker->send(ipc::encode(ipc::Cancel{call_id, "timed out"}));
    late->done(CallResult{ipc::CallStatus::kTimeout, 0, {}});
  });
}

void WorkerRegistry::cancel(std::uint64_t call_id, const std::string& reason) {
  const auto worker = in_flight_->owner_of(call_id);
  if (!worker || !in_flight_->take(call_id)) return;
  worker->send(ipc::encode(ipc::Cancel{call_id, reason}));
}

bool WorkerRegistry::deliver(std::uint64_t call_id, const ipc::MessageMeta& meta,
                             std::string body) {
  const auto worker = in_flight_->owner_of(call_id);
  InFlightCall* call = worker ? in_flight_->find(call_id, *worker) : nullptr;
  if (!call || !call->on_message) return false;
  call->on_message(meta, std::move(body));
  return true;
}

void WorkerRegistry::answer(std::uint64_t call_id, std::uint64_t key,
                            std::string response_without_id) {
  const auto worker = in_flight_->owner_of(call_id);
  if (worker) worker->send(ipc::encode(ipc::Answer{call_id, key, std::move(response_without_id)}));
}

// Tells the worker a reply has left the supervisor (kDelivered) when its last holder lets
// go of it; a worker that is gone by then needs telling nothing. The notice rides with the
// next frame to the worker when one follows soon (docs/architecture.md, "The channel").
struct DeliveryNotice {
  DeliveryNotice(std::weak_ptr<ipc::Channel> channel, std::uint64_t call_id)
      : channel(std::move(channel)), call_id(call_id) {}
  DeliveryNotice(const DeliveryNotice&) = delete;
  DeliveryNotice& operator=(const DeliveryNotice&) = delete;
  std::weak_ptr<ipc::Channel> channel;
  std::uint64_t call_id = 0;
  ~DeliveryNotice() {
    const auto open = channel.lock();
    if (open && open->is_open()) open->send_deferred(ipc::encode(ipc::Delivered{call_id}));
  }
};

void WorkerRegistry::on_reply(const std::shared_ptr<Worker>& worker, ipc::Reply&& reply) {
  auto slot = std::make_shared<DeliveryNotice>(worker->channel(), reply.call_id);
  if (!in_flight_->find(reply.call_id, *worker)) return;  // cancelled or past its backstop
  CallCallback done = std::move(in_flight_->take(reply.call_id)->done);
  const auto& outcome = reply.outcome;
  done(CallResult{outcome.status, outcome.response_bytes, std::move(reply.body),
                  std::move(reply.arriving), outcome.kind, outcome.error_code, std::move(slot),
                  outcome.sent_unix_nanos, outcome.first_byte_unix_nanos,
                  outcome.replied_unix_nanos});
}

void WorkerRegistry::on_message(const std::shared_ptr<Worker>& worker, ipc::Message&& message) {
  if (message.call_id == 0) {
    if (computer_notification_) computer_notification_(worker->name(), std::move(message.body));
    return;
  }
  InFlightCall* call = in_flight_->find(message.call_id, *worker);
  if (!call) return;  // ended meanwhile
  // The worker restarted its own deadline for this progress; the backstop follows, whether
  // or not the caller takes the message.
  if (message.meta.kind == ipc::MessageKind::kProgress) arm_backstop(*worker, message.call_id);
  if (call->on_message) call->on_message(message.meta, std::move(message.body));
}

void WorkerRegistry::fail_in_flight(const Worker& worker, ipc::CallStatus status) {
  for (auto& call : in_flight_->take_all_at(worker)) call.done(CallResult{status, 0, {}});
}

}  // namespace sb::supervisor
