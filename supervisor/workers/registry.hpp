// The supervisor's side of the workers: one per configured computer, keyed by the
// computer's verifier (the name is a label). Each is a Worker (worker.hpp), which owns its
// process's state and checks its frames; the registry holds what spans them, its jobs in
// their own files:
//   registry.cpp  the processes: spawn from a queue, acting on what their frames say (a
//                 violation kills the worker), exits, stalls, respawn, shutdown
//   calls.cpp     calls: forward with a backstop deadline, cancel, replies, messages
//                 (each call in flight, with its worker, in calls_in_flight.hpp)
//   reload.cpp    hand-over of attached sockets and a reload as a diff by verifier
//   views.cpp     what routes and `switchboard workers` see
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/unique_fd.hpp"
#include "ipc/channel.hpp"
#include "ipc/frame.hpp"
#include "ipc/messages.hpp"
#include "ipc/status_board.hpp"
#include "ipc/worker_frames.hpp"
#include "shared/deadline_queue.hpp"
#include "shared/service_notify.hpp"
#include "shared/timings.hpp"
#include "shared/verifier.hpp"
#include "supervisor/config/config.hpp"
#include "supervisor/switching/descriptors.hpp"
#include "supervisor/switching/switch_state.hpp"
#include "supervisor/workers/calls.hpp"
#include "supervisor/workers/hand_over.hpp"
#include "supervisor/workers/store_entry.hpp"
#include "supervisor/workers/views.hpp"
#include "supervisor/workers/worker_process.hpp"

namespace sb::supervisor {

class AuditLog;
class CallsInFlight;
class Worker;
namespace worker_news {
struct Session;
}

// What the workers left when they parked for a switch (WorkerRegistry::park).
struct ParkedWorkers {
  std::vector<CarriedSession> sessions;  // each socket among `sockets`, by name
  std::vector<NamedDescriptor> sockets;
  std::vector<LostSession> lost;
  std::vector<CarriedGeneration> generations;
  std::uint64_t next_call_id = 1;
};

// What became of each session a switch carried in: "resumed", "redialled" (it was lost and
// its computer dials again) or "removed" (its computer is no longer configured).
struct CarriedOutcome {
  std::string computer;
  std::string outcome;
};

class WorkerRegistry {
 public:
  // Opens `worker_binary` now and spawns from that descriptor ever after: replacing the
  // file (a package upgrade) cannot mix two builds. Throws when it cannot be opened.
  // `store`: the service manager's file descriptor store, where each computer's socket and
  // each worker's record file is kept while it lasts (docs/architecture.md, "Switching").
  // `launch` starts each worker's process (empty: the product's, worker_process.hpp).
  WorkerRegistry(boost::asio::io_context& io, const std::filesystem::path& worker_binary,
                 AuditLog& audit, Timings timings = {}, ServiceNotifier store = ServiceNotifier(""),
                 LaunchWorker launch = {});
  ~WorkerRegistry();

  // Spawns a worker per computer, a few at a time, each in a turn of the event loop of its
  // own; `all_up` runs once every one of them has said hello.
  void start(const std::vector<config::Computer>& computers, std::function<void()> all_up);
  // How long a worker may take to park its session ([timeouts] drain_secs), from the next
  // configure of each worker on (start, reload).
  void set_drain(std::chrono::milliseconds drain) { drain_ = drain; }
  // What a worker may hold for the supervisor before it stops reading its computer
  // ([limits] max_worker_buffer_mib), from the next configure of each worker on.
  void set_worker_buffer(std::uint64_t bytes) { worker_buffer_bytes_ = bytes; }
  // A reload: diff by verifier (docs/configuration.md, "Reload"). Writes computer_renamed
  // and vm_revoked lines.
  void apply(const std::vector<config::Computer>& computers);
  // Closes every computer with 1001 and lets the workers exit; `done` runs when all have.
  void shutdown(std::function<void()> done);

  // Whether `presented` is some computer's verifier (every entry compared, no early exit).
  bool knows_secret(const Verifier& presented) const;
  // Re-resolves the verifier now and passes the socket to its worker. `socket` is taken
  // only when the result is kDone.
  HandOver hand_over(const Verifier& presented, base::UniqueFd& socket, std::string upgrade_bytes,
                     const std::string& peer);

  // Forwards one request; the callback runs exactly once unless the call is cancelled.
  // Returns the call's id, for cancel().
  std::uint64_t forward(std::string_view computer, CallRequest request, CallCallback done);
  // The call ended early (`reason` is told to the computer): its share is released now and
  // the late reply dropped.
  void cancel(std::uint64_t call_id, const std::string& reason);
  // Passes a caller's answer to the request the computer sent as `key` during the call.
  void answer(std::uint64_t call_id, std::uint64_t key, std::string response_without_id);
  // Hands a message to the caller of a call in flight; false when it cannot take any.
  bool deliver(std::uint64_t call_id, const ipc::MessageMeta& meta, std::string body);
  // Where a computer's notification that names no call goes (by computer name): a task's
  // status, a resource's update; who takes it is not the registry's business.
  using ComputerNotificationHandler =
      std::function<void(const std::string& computer, std::string body)>;
  void on_computer_notification(ComputerNotificationHandler handler) {
    computer_notification_ = std::move(handler);
  }

  std::optional<ComputerView> view(std::string_view computer) const;
  // Whether `computer` is configured now, without reading its status.
  bool has(std::string_view computer) const { return find(computer) != nullptr; }
  std::vector<std::string> names() const;  // config order
  bool any_ready() const;
  std::vector<WorkerRow> rows() const;

  // ---- switching in place (docs/architecture.md, "Switching"; switching.cpp) ----

  // Asks every worker to park its computer's session within `drain` and waits until all
  // of them have exited (one that outstays the drain by a grace is killed). Calls in
  // flight stay in flight: their callers' connections cross too. Nothing is respawned.
  void park(std::chrono::milliseconds drain, std::function<void(ParkedWorkers)> done);
  // What a switch carried in, right after start() (before any worker spawns): call ids and
  // generations go on from it, each session goes to its computer's worker when that
  // spawns, and one whose computer is gone is closed with 4003. `all_carried` runs once every
  // carried session was taken up or lost (at once when there is none).
  void take_up_carried(const SwitchState& state, std::vector<NamedDescriptor>& descriptors,
                       std::function<void(std::vector<CarriedOutcome>)> all_carried);
  // Every carried caller's request has been answered or taken up again (forward() with
  // `carried`): the carried calls nobody took up are cancelled toward their computers.
  void carried_callers_heard();
  std::size_t size() const { return workers_.size(); }
  bool all_started() const;

 private:
  void spawn(const std::shared_ptr<Worker>& worker);
  void start_queued();
  std::size_t starting_count() const;
  std::optional<std::string> launch(Worker& worker, std::string_view segment);
  void on_frame(const std::shared_ptr<Worker>& worker, ipc::Frame&& frame);
  void on_session_news(const std::shared_ptr<Worker>& worker, const worker_news::Session& news);
  void write_event(const Worker& worker, const ipc::SessionEvent& event);
  void on_reply(const std::shared_ptr<Worker>& worker, ipc::Reply&& reply);
  void on_message(const std::shared_ptr<Worker>& worker, ipc::Message&& message);
  void expel(Worker& worker, const std::string& reason);
  void arm_backstop(const Worker& worker, std::uint64_t call_id);
  void on_exit(const std::shared_ptr<Worker>& worker, int wait_status);
  void mourn(const std::shared_ptr<Worker>& worker, int wait_status);
  void schedule_respawn(const std::shared_ptr<Worker>& worker);
  void fail_in_flight(const Worker& worker, ipc::CallStatus status);
  void configure(Worker& worker);
  void watch_stalls();
  void watch_one(Worker& worker);
  void audit_lost_sessions(Worker& worker);
  void retire(const std::shared_ptr<Worker>& worker, bool revoke);
  std::shared_ptr<Worker> find(std::string_view computer) const;
  std::shared_ptr<Worker> find_by_verifier(const std::string& rendered) const;
  void maybe_finish_shutdown();
  std::uint64_t take_up_call(const std::shared_ptr<Worker>& worker, CallRequest request,
                             CallCallback done);
  void carry_in(const CarriedSession& session, std::vector<NamedDescriptor>& descriptors);
  void note_carried_outcome(const std::string& computer, std::string outcome);
  void release_held_calls(Worker& worker, bool taken_up);
  void lose_carried(Worker& worker);
  void maybe_finish_parking();
  void send_carried(Worker& worker);
  void report_when_all_up();

  boost::asio::io_context& io_;
  const Timings timings_;
  const ServiceNotifier store_;
  std::filesystem::path worker_binary_;
  base::UniqueFd worker_program_;  // the binary found at start, executed by descriptor
  LaunchWorker launch_;
  AuditLog& audit_;
  std::vector<std::shared_ptr<Worker>> workers_;   // config order
  std::vector<std::shared_ptr<Worker>> retiring_;  // removed or rotated, exiting
  std::deque<std::weak_ptr<Worker>> queued_;       // waiting for their first spawn, in order
  bool start_posted_ = false;
  std::uint64_t next_call_id_ = 1;
  std::uint64_t next_segment_ = 1;
  boost::asio::steady_timer stall_timer_;
  boost::asio::steady_timer park_timer_;      // kills workers that outstay a park
  std::unique_ptr<CallsInFlight> in_flight_;  // every worker's, by call id
  DeadlineQueue backstops_;                   // one per call in flight, on one timer
  const std::size_t start_window_;            // workers starting at once, at most
  std::function<void()> shutdown_done_;
  std::function<void()> all_up_;
  ComputerNotificationHandler computer_notification_;
  bool shutting_down_ = false;
  std::chrono::milliseconds drain_{10'000};
  std::uint64_t worker_buffer_bytes_ = config::Limits{}.max_worker_buffer_bytes;
  // Switching: parking (park()), and what is owed to whoever asked.
  bool parking_ = false;
  std::function<void(ParkedWorkers)> parked_done_;
  std::vector<std::string> attached_when_parking_;  // computers, as park() began
  std::vector<CarriedOutcome> carried_outcomes_;
  std::size_t carried_waiting_ = 0;
  bool carried_callers_heard_ = false;
  std::function<void(std::vector<CarriedOutcome>)> on_all_carried_;
};

}  // namespace sb::supervisor
