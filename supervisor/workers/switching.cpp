// The registry's part in a switch in place (registry.hpp; docs/architecture.md,
// "Switching"): the old process's workers park their computers' sessions, and the new
// process's workers take them up, with the calls whose callers crossed too.
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <memory>
#include <nlohmann/json.hpp>

#include "base/unix_time.hpp"
#include "ipc/parked_session.hpp"
#include "ipc/supervisor_frames.hpp"
#include "shared/log.hpp"
#include "shared/verifier.hpp"
#include "supervisor/audit/audit_log.hpp"
#include "supervisor/workers/calls_in_flight.hpp"
#include "supervisor/workers/registry.hpp"
#include "supervisor/workers/worker.hpp"

namespace sb::supervisor {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

// A worker that has not parked and exited this long after the drain is killed: its
// computer redials.
constexpr auto kParkGrace = 5s;

// The vm_detach line of a carried session that ended in this process without a worker.
void write_lost(AuditLog& audit, const CarriedSession& session, std::uint16_t code,
                std::string reason) {
  const auto attached_for_ms = unix_time_now<std::chrono::milliseconds>() - session.attached_at_ms;
  audit.write("vm_detach",
              {{"computer", session.computer},
               {"peer", session.peer},
               {"generation", session.generation},
               {"code", code},
               {"reason", std::move(reason)},
               {"attached_for_secs", std::max<std::int64_t>(0, attached_for_ms / 1000)}});
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
    if (worker->live_session(&generation)) attached_when_parking_.push_back(worker->name());
    worker->ask_to_park(drain);
  }
  park_timer_.expires_after(drain + kParkGrace);
  park_timer_.async_wait([this](boost::system::error_code error) {
    if (error) return;
    for (const auto* list : {&workers_, &retiring_}) {
      for (auto& worker : *list) {
        if (!worker->has_process()) continue;
        log_error("worker did not park in time; killing it", {{"computer", worker->name()}});
        worker->kill();
      }
    }
  });
  maybe_finish_parking();
}

void WorkerRegistry::maybe_finish_parking() {
  if (!parking_ || !parked_done_) return;
  for (const auto* list : {&workers_, &retiring_}) {
    for (const auto& worker : *list) {
      if (worker->has_process()) return;  // not yet exited and mourned
    }
  }
  park_timer_.cancel();
  ParkedWorkers result{.next_call_id = next_call_id_};
  for (auto& worker : workers_) {
    result.generations.push_back(
        {.verifier = render_verifier(worker->verifier()), .generation = worker->generation()});
    auto parked = worker->take_parked();
    if (!parked) continue;
    result.sockets.push_back({parked->first.socket, std::move(parked->second)});
    result.sessions.push_back(std::move(parked->first));
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
  for (const auto& entry : state.generations) {
    if (const auto worker = find_by_verifier(entry.verifier))
      worker->continue_generations_from(entry.generation);
  }
  for (const auto& session : state.sessions) carry_in(session, descriptors);
  if (carried_waiting_ == 0) {
    boost::asio::post(io_, [this] {
      if (auto all_carried = std::exchange(on_all_carried_, nullptr))
        all_carried(carried_outcomes_);
    });
  }
}

// One carried session, to its computer's worker; or, when it cannot be taken up (its
// socket or record did not cross whole) or its computer is gone, ended with its line.
void WorkerRegistry::carry_in(const CarriedSession& session,
                              std::vector<NamedDescriptor>& descriptors) {
  const auto named = std::find_if(descriptors.begin(), descriptors.end(),
                                  [&](const auto& entry) { return entry.name == session.socket; });
  base::UniqueFd socket;
  if (named != descriptors.end()) {
    socket = std::move(named->fd);
    descriptors.erase(named);
  }
  std::string why;
  const auto record = ipc::decode_parked_session(session.record, why);
  const auto worker = find_by_verifier(session.verifier);
  if (!socket.valid() || !record || record->generation != session.generation) {
    log_error("a carried session cannot be taken up; its computer redials",
              {{"computer", session.computer},
               {"error", socket.valid() ? why : "its socket did not cross"}});
    drop_socket(std::move(socket));
    store_.forget(session.socket);
    write_lost(audit_, session, 1006, "the session could not be taken up after a switch");
    carried_outcomes_.push_back({session.computer, "redialled"});
    return;
  }
  if (!worker || worker->carried()) {
    audit_.write("vm_revoked", {{"computer", session.computer},
                                {"peer", session.peer},
                                {"generation", session.generation}});
    close_parked_socket(io_, std::move(socket), 4003, "the VM secret was revoked or rotated");
    store_.forget(session.socket);
    write_lost(audit_, session, 4003, "the VM secret was revoked or rotated");
    carried_outcomes_.push_back({session.computer, "removed"});
    return;
  }
  if (worker->name() != session.computer) {
    audit_.write("computer_renamed", {{"from", session.computer},
                                      {"to", worker->name()},
                                      {"attached", true},
                                      {"generation", session.generation}});
  }
  std::set<std::uint64_t> calls;
  for (const auto& call : record->calls) calls.insert(call.call_id);
  worker->carry_in(session, std::move(socket), StoreEntry(&store_, session.socket),
                   std::move(calls));
  ++carried_waiting_;
}

// A call whose caller crossed: it is at the computer already, in the carried session's
// record, and is taken up under its own id with what is left of its time.
std::uint64_t WorkerRegistry::take_up_call(const std::shared_ptr<Worker>& worker,
                                           CallRequest request, CallCallback done) {
  const std::uint64_t call_id = request.carried->call_id;
  CarriedIn* carried = worker ? worker->carried() : nullptr;
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
  arm_backstop(*worker, call_id);
  return call_id;
}

// A carried session goes to its worker once the worker is spawned (after its kConfigure)
// and every carried caller has been heard from, so that the list of calls with a caller
// again is final and no reply of a call comes before its caller took it up.
void WorkerRegistry::send_carried(Worker& worker) {
  if (!carried_callers_heard_) return;
  bool failed = false;
  if (auto frame = worker.take_up_frame(failed)) return worker.send(std::move(*frame));
  if (!failed) return;
  // Out of descriptors: the worker cannot be given it; its death writes the line.
  log_error("cannot hand a carried session to its worker", {{"computer", worker.name()}});
  worker.stop();
}

void WorkerRegistry::carried_callers_heard() {
  carried_callers_heard_ = true;
  for (auto& worker : workers_) send_carried(*worker);
}

// The calls that waited for the carried session go to it, in order (those cancelled
// meanwhile excepted), or, when it was lost, find their computer not attached.
void WorkerRegistry::release_held_calls(Worker& worker, bool taken_up) {
  if (!worker.awaiting_take_up()) return;
  for (auto& frame : worker.release_held()) {
    if (!in_flight_->find(frame.call_id, worker)) continue;
    if (taken_up && worker.channel()) {
      worker.send(std::move(frame));
      continue;
    }
    in_flight_->take(frame.call_id)->done(CallResult{ipc::CallStatus::kNotAttached, 0, {}});
  }
}

// A carried session lost before its worker took it up: the calls that waited for it and
// the calls taken up for it end now, not at their deadlines, and no later caller takes up
// another.
void WorkerRegistry::lose_carried(Worker& worker) {
  release_held_calls(worker, false);
  for (const auto call_id : worker.drop_carried()) {
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
