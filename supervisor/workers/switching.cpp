// The registry's part in a switch in place (registry.hpp; docs/architecture.md,
// "Switching"): the old process's workers park their computers' sessions, and the new
// process's workers take them up, with the calls whose callers crossed too.
#include <fcntl.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <memory>
#include <nlohmann/json.hpp>

#include "ipc/parked_session.hpp"
#include "ipc/supervisor_frames.hpp"
#include "shared/log.hpp"
#include "shared/verifier.hpp"
#include "supervisor/audit/audit_log.hpp"
#include "supervisor/workers/calls_in_flight.hpp"
#include "supervisor/workers/registry.hpp"
#include "supervisor/workers/worker_record.hpp"

namespace sb::supervisor {
namespace {

using json = nlohmann::json;

// A worker that has not parked and exited this long after the drain is killed: its
// computer redials.
constexpr auto kParkGrace = 5s;

std::int64_t ms_since_epoch(std::chrono::system_clock::time_point time) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(time.time_since_epoch()).count();
}

std::chrono::system_clock::time_point from_ms(std::int64_t ms) {
  return std::chrono::system_clock::time_point(std::chrono::milliseconds(ms));
}

// A close frame written straight to a parked computer's socket, which is at a frame
// boundary both ways: for a session no worker takes up. The computer sees the close code
// as if a worker had sent it. What it still sends (its own close frame) is read and
// dropped until it closes, for at most a few seconds: a socket closed with unread bytes
// is reset, and a reset can cost the computer the close frame before it read it.
void close_parked_socket(boost::asio::io_context& io, base::UniqueFd socket, std::uint16_t code,
                         std::string_view reason) {
  std::string frame{'\x88', static_cast<char>(2 + reason.size()), static_cast<char>(code >> 8),
                    static_cast<char>(code & 0xff)};
  frame.append(reason);
  (void)::send(socket.get(), frame.data(), frame.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  ::shutdown(socket.get(), SHUT_WR);
  struct Lingering {
    Lingering(boost::asio::io_context& io, int fd) : stream(io, fd), deadline(io, 3s) {}
    boost::asio::posix::stream_descriptor stream;
    boost::asio::steady_timer deadline;
    std::array<char, 512> scratch{};
    void drain(std::shared_ptr<Lingering> self) {
      stream.async_read_some(boost::asio::buffer(scratch),
                             [self](boost::system::error_code error, std::size_t) {
                               if (error) {
                                 self->deadline.cancel();
                                 return;
                               }
                               self->drain(self);
                             });
    }
  };
  auto lingering = std::make_shared<Lingering>(io, socket.release());
  lingering->deadline.async_wait([lingering](boost::system::error_code error) {
    boost::system::error_code ignored;
    if (!error) lingering->stream.close(ignored);
  });
  lingering->drain(lingering);
}

void drop_socket(base::UniqueFd socket) {
  if (socket.valid()) ::shutdown(socket.get(), SHUT_RDWR);
}

}  // namespace

// ---- the old process ----

void WorkerRegistry::park(std::chrono::milliseconds drain,
                          std::function<void(ParkedWorkers)> done) {
  parking_ = true;
  parked_done_ = std::move(done);
  stall_timer_.cancel();  // and watch_stalls no longer re-arms it
  queued_.clear();
  for (auto& worker : workers_) {
    std::uint64_t generation = 0;
    if (worker->live_session(&generation)) attached_when_parking_.push_back(worker->name);
    if (worker->respawn_timer) worker->respawn_timer->cancel();
    if (!worker->has_process()) {
      worker->state = WorkerRecord::State::kExited;
      continue;
    }
    worker->parking = true;
    worker->channel->send(ipc::encode(ipc::Park{drain}));
  }
  park_timer_.expires_after(drain + kParkGrace);
  park_timer_.async_wait([this](boost::system::error_code error) {
    if (error) return;
    for (const auto* list : {&workers_, &retiring_}) {
      for (auto& worker : *list) {
        if (!worker->process) continue;
        log_error("worker did not park in time; killing it", {{"computer", worker->name}});
        worker->process->kill();
      }
    }
  });
  maybe_finish_parking();
}

// A worker's kParked: its record is checked against the supervisor's own record of the
// session before anything relies on it, and the supervisor's copy of the socket is put
// aside for the next process.
void WorkerRegistry::on_parked(const std::shared_ptr<WorkerRecord>& worker, ipc::Parked&& parked) {
  if (!worker->parking || worker->parked) return expel(worker, "parked unasked or twice");
  if (parked.record.empty()) return;  // it had no session to leave
  std::string why;
  const auto record = ipc::decode_parked_session(parked.record, why);
  if (!record) return expel(worker, "parked a record that does not read: " + why);
  const auto session = worker->sessions.find(record->generation);
  if (session == worker->sessions.end() || !session->second.attached ||
      session->second.peer != record->peer)
    return expel(worker, "parked a session it was not given");
  if (!session->second.socket.valid()) {
    // No copy of its socket was made (out of descriptors at its attach): it cannot cross.
    // It ends when the worker exits, which writes its vm_detach.
    log_warn("a parked session cannot be carried: no copy of its socket",
             {{"computer", worker->name}});
    return;
  }
  for (const auto& call : record->calls) {
    if (call.call_id >= next_call_id_) return expel(worker, "parked a call never made");
  }
  worker->parked = CarriedSession{.verifier = render_verifier(worker->verifier),
                                  .computer = worker->name,
                                  .generation = record->generation,
                                  .peer = record->peer,
                                  .attached_at_ms = ms_since_epoch(session->second.attached_at),
                                  .socket = stored_socket_name(worker->name, record->generation),
                                  .record = std::move(parked.record)};
  worker->parked_socket = std::move(session->second.socket);
  session->second.stored.keep();  // in the store it stays, for the next process
  worker->sessions.erase(session);
}

void WorkerRegistry::maybe_finish_parking() {
  if (!parking_ || !parked_done_) return;
  for (const auto* list : {&workers_, &retiring_}) {
    for (const auto& worker : *list) {
      if (worker->process) return;  // not yet exited and mourned
    }
  }
  park_timer_.cancel();
  ParkedWorkers result{.next_call_id = next_call_id_};
  for (auto& worker : workers_) {
    result.generations.push_back(
        {.verifier = render_verifier(worker->verifier), .generation = worker->generation});
    if (!worker->parked) continue;
    result.sockets.push_back({worker->parked->socket, std::move(worker->parked_socket)});
    result.sessions.push_back(std::move(*worker->parked));
    worker->parked.reset();
  }
  for (const auto& computer : attached_when_parking_) {
    const bool carried =
        std::any_of(result.sessions.begin(), result.sessions.end(),
                    [&](const auto& session) { return session.computer == computer; });
    if (!carried) result.lost.push_back({computer, "not at a message boundary in time"});
  }
  auto done = std::exchange(parked_done_, nullptr);
  done(std::move(result));
}

// ---- the new process ----

void WorkerRegistry::take_up_carried(const SwitchState& state,
                                     std::vector<NamedDescriptor>& descriptors,
                                     std::function<void(std::vector<CarriedOutcome>)> all_carried) {
  on_all_carried_ = std::move(all_carried);
  next_call_id_ = std::max(next_call_id_, state.next_call_id);
  const auto by_verifier = [this](const std::string& verifier) -> std::shared_ptr<WorkerRecord> {
    for (const auto& worker : workers_) {
      if (render_verifier(worker->verifier) == verifier) return worker;
    }
    return nullptr;
  };
  for (const auto& entry : state.generations) {
    if (const auto worker = by_verifier(entry.verifier))
      worker->generation = std::max(worker->generation, entry.generation);
  }
  const auto lost = [this](const CarriedSession& session, std::uint16_t code, std::string reason) {
    audit_.write("vm_detach",
                 {{"computer", session.computer},
                  {"peer", session.peer},
                  {"generation", session.generation},
                  {"code", code},
                  {"reason", std::move(reason)},
                  {"attached_for_secs",
                   std::max<std::int64_t>(0, (ms_since_epoch(std::chrono::system_clock::now()) -
                                              session.attached_at_ms) /
                                                 1000)}});
  };
  for (const auto& session : state.sessions) {
    const auto named = std::find_if(descriptors.begin(), descriptors.end(), [&](const auto& entry) {
      return entry.name == session.socket;
    });
    base::UniqueFd socket;
    if (named != descriptors.end()) {
      socket = std::move(named->fd);
      descriptors.erase(named);
    }
    std::string why;
    const auto record = ipc::decode_parked_session(session.record, why);
    const auto worker = by_verifier(session.verifier);
    if (!socket.valid() || !record || record->generation != session.generation) {
      log_error("a carried session cannot be taken up; its computer redials",
                {{"computer", session.computer},
                 {"error", socket.valid() ? why : "its socket did not cross"}});
      drop_socket(std::move(socket));
      store_.forget(session.socket);
      lost(session, 1006, "the session could not be taken up after a switch");
      carried_outcomes_.push_back({session.computer, "redialled"});
      continue;
    }
    if (!worker || worker->carried) {
      audit_.write("vm_revoked", {{"computer", session.computer},
                                  {"peer", session.peer},
                                  {"generation", session.generation}});
      close_parked_socket(io_, std::move(socket), 4003, "the VM secret was revoked or rotated");
      store_.forget(session.socket);
      lost(session, 4003, "the VM secret was revoked or rotated");
      carried_outcomes_.push_back({session.computer, "removed"});
      continue;
    }
    if (worker->name != session.computer) {
      audit_.write("computer_renamed", {{"from", session.computer},
                                        {"to", worker->name},
                                        {"attached", true},
                                        {"generation", session.generation}});
    }
    worker->generation = std::max(worker->generation, session.generation);
    worker->sessions[session.generation] =
        SessionRecord{.peer = session.peer,
                      .attached = true,
                      .attached_at = from_ms(session.attached_at_ms),
                      .socket = std::move(socket),
                      .stored = StoreEntry(&store_, session.socket),
                      .carried = true};
    CarriedIn carried{.generation = session.generation, .record = session.record};
    for (const auto& call : record->calls) carried.calls.insert(call.call_id);
    worker->carried = std::move(carried);
    worker->awaiting_take_up = true;
    ++carried_waiting_;
  }
  if (carried_waiting_ == 0) {
    boost::asio::post(io_, [this] {
      if (auto all_carried = std::exchange(on_all_carried_, nullptr))
        all_carried(carried_outcomes_);
    });
  }
}

// A call whose caller crossed: it is at the computer already, in the carried session's
// record, and is taken up under its own id with what is left of its time.
std::uint64_t WorkerRegistry::take_up_call(const std::shared_ptr<WorkerRecord>& worker,
                                           CallRequest request, CallCallback done) {
  const std::uint64_t call_id = request.carried->call_id;
  CarriedIn* carried = worker && worker->carried ? &*worker->carried : nullptr;
  if (!carried || !carried->calls.contains(call_id) ||
      std::find(carried->taken_up.begin(), carried->taken_up.end(), call_id) !=
          carried->taken_up.end() ||
      in_flight_->contains(call_id)) {
    done(CallResult{ipc::CallStatus::kDisconnected, 0, {}});
    return 0;
  }
  carried->taken_up.push_back(call_id);
  in_flight_->add(call_id, worker,
                  InFlightCall{.done = std::move(done),
                               .on_message = std::move(request.on_message),
                               .timeout = request.timeout,
                               .last_moment = request.carried->started + request.max_total,
                               .reply_may_arrive = request.reply_may_arrive});
  arm_backstop(worker, call_id);
  return call_id;
}

// The carried session, on a copy of the supervisor's socket, with the calls that have a
// caller again: sent once the worker is spawned (after its kConfigure) and every carried
// caller has been heard from, so that the list is final and no reply of a call comes
// before its caller took it up.
void WorkerRegistry::send_carried(WorkerRecord& worker) {
  if (!carried_callers_heard_ || !worker.carried || worker.carried->sent || !worker.channel) return;
  CarriedIn& carried = *worker.carried;
  carried.sent = true;
  const auto session = worker.sessions.find(carried.generation);
  if (session == worker.sessions.end()) return;
  base::UniqueFd copy(::fcntl(session->second.socket.get(), F_DUPFD_CLOEXEC, 0));
  if (!copy.valid()) {
    // Out of descriptors: the worker cannot be given it; its death below writes the line.
    log_error("cannot hand a carried session to its worker", {{"computer", worker.name}});
    return stop(worker);
  }
  worker.channel->send(ipc::encode(ipc::TakeUp{.socket = std::move(copy),
                                               .taken_up_calls = carried.taken_up,
                                               .record = std::move(carried.record)}));
}

void WorkerRegistry::carried_callers_heard() {
  carried_callers_heard_ = true;
  for (auto& worker : workers_) send_carried(*worker);
}

void WorkerRegistry::on_taken_up(const std::shared_ptr<WorkerRecord>& worker,
                                 const ipc::TakenUpEvent& event) {
  const auto session = worker->sessions.find(event.generation);
  if (session == worker->sessions.end() || !session->second.carried || session->second.taken_up ||
      session->second.peer != event.peer)
    return expel(worker, "reported a resume it was not given");
  session->second.taken_up = true;
  session->second.taken_up_at = std::chrono::system_clock::now();
  ++worker->sessions_taken_up;
  write_event(*worker, event);
  worker->carried.reset();
  release_held_calls(*worker, true);
  note_carried_outcome(worker->name, "resumed");
}

// The calls that waited for the carried session go to it, in order (those cancelled
// meanwhile excepted), or, when it was lost, find their computer not attached.
void WorkerRegistry::release_held_calls(WorkerRecord& worker, bool taken_up) {
  if (!worker.awaiting_take_up) return;
  worker.awaiting_take_up = false;
  auto held = std::exchange(worker.held_calls, {});
  for (auto& frame : held) {
    if (!in_flight_->find(frame.call_id, worker)) continue;
    if (taken_up && worker.channel) {
      worker.channel->send(std::move(frame));
      continue;
    }
    in_flight_->take(frame.call_id)->done(CallResult{ipc::CallStatus::kNotAttached, 0, {}});
  }
}

// A carried session lost before its worker took it up: the calls that waited for it and
// the calls taken up for it end now, not at their deadlines, and no later caller takes up
// another.
void WorkerRegistry::lose_carried(WorkerRecord& worker) {
  release_held_calls(worker, false);
  if (!worker.carried) return;
  const auto calls = std::move(worker.carried->calls);
  worker.carried.reset();
  for (const auto call_id : calls) {
    if (!in_flight_->find(call_id, worker)) continue;
    in_flight_->take(call_id)->done(CallResult{ipc::CallStatus::kDisconnected, 0, {}});
  }
}

void WorkerRegistry::note_carried_outcome(const std::string& computer, std::string outcome) {
  if (carried_waiting_ == 0) return;
  carried_outcomes_.push_back({computer, std::move(outcome)});
  if (--carried_waiting_ > 0) return;
  if (auto all_carried = std::exchange(on_all_carried_, nullptr)) all_carried(carried_outcomes_);
}

}  // namespace sb::supervisor
