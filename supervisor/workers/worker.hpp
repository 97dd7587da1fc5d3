// One worker as the supervisor knows it: its process, channel and status record, the
// sessions it was handed, what it carried across a switch, and the contract every frame it
// sends is checked against (a frame out of contract is a violation, and the registry kills
// the worker for it). What spans workers (the calls in flight, the start queue, the audit
// log, the outcome of a switch) is the registry's (registry.hpp); a Worker answers it with
// plain data.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "base/unique_fd.hpp"
#include "ipc/channel.hpp"
#include "ipc/frame.hpp"
#include "ipc/status_board.hpp"
#include "ipc/worker_frames.hpp"
#include "shared/timings.hpp"
#include "shared/verifier.hpp"
#include "supervisor/config/config.hpp"
#include "supervisor/switching/switch_state.hpp"
#include "supervisor/workers/hand_over.hpp"
#include "supervisor/workers/store_entry.hpp"
#include "supervisor/workers/views.hpp"
#include "supervisor/workers/worker_process.hpp"

namespace sb::supervisor {

// A computer's socket the supervisor handed over, by generation. The supervisor's own
// record, so that its audit lines name the right peer and generation whatever the worker
// says: a worker may report only sessions it was given.
//
// The supervisor also keeps its own copy of the computer's socket while the session lasts:
// when the worker parks the session for a switch in place, the socket must outlive the
// worker (docs/architecture.md, "Switching"). A worker ends a session with a shutdown,
// which ends it for every copy; one that dies leaves that to the supervisor.
struct SessionRecord {
  std::string peer;
  bool attached = false;  // the worker reported its vm_attach
  std::chrono::system_clock::time_point attached_at;
  base::UniqueFd socket;
  StoreEntry stored;  // the socket, in the service manager's store
  // Carried in by a switch, and whether (and when) its worker took it up (vm_resumed).
  bool carried = false;
  bool taken_up = false;
  std::chrono::system_clock::time_point taken_up_at;
};

// A session a switch carried in, for the worker's first process to take up
// (ipc::TakeUp): its record as the old worker left it, which calls it holds, and which of
// those have a caller again (known for sure once every carried caller has been heard
// from: WorkerRegistry::carried_callers_heard).
struct CarriedIn {
  std::uint64_t generation = 0;
  std::string record;
  std::set<std::uint64_t> calls;
  std::vector<std::uint64_t> taken_up;
  bool sent = false;  // the worker has it
};

// What /proc says of a worker's process.
struct ProcessFacts {
  std::int64_t resident_kib = 0;
  bool sandboxed = false;  // no_new_privs and a seccomp filter
};

// What one frame from the worker comes to, for the registry to act on.
namespace worker_news {
struct Nothing {};  // checked and noted; nothing else to do
struct Violation {
  std::string reason;
};
struct Greeted {};     // its hello: it is up
struct OtherBuild {};  // a hello from another build: it was stopped
// A session event: the audit line to write (if any), and what it did to a carried session.
struct Session {
  std::optional<ipc::SessionEvent> line;
  bool carried_lost = false;  // a carried session ended before it was taken up
  bool carried_taken_up = false;
};
}  // namespace worker_news
using WorkerNews =
    std::variant<worker_news::Nothing, worker_news::Violation, worker_news::Greeted,
                 worker_news::OtherBuild, worker_news::Session, ipc::Reply, ipc::Message>;

// What a look at a running worker finds (Worker::watch).
enum class WorkerHealth {
  kFine,
  kNoHello,          // silent since its spawn for too long: killed
  kFrameUnfinished,  // a violation
  kRecordTorn,       // a violation
  kSilent,           // no heartbeat for too long: killed
  kStalled,          // newly stale: its computer is reported not ready
  kRecovered,        // beating again
};

class Worker {
 public:
  // kQueued: waiting in the registry's start queue for its first process.
  enum class State { kQueued, kStarting, kRunning, kRestarting, kRetiring, kExited };

  explicit Worker(const config::Computer& computer);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  const std::string& name() const { return name_; }
  const Verifier& verifier() const { return verifier_; }
  // A reload kept its computer (same verifier): the computer's new settings. The name it
  // had, when the reload renamed it.
  std::optional<std::string> update(const config::Computer& computer);
  // The kConfigure frame its process gets.
  ipc::Frame configuration(const Timings& timings, std::chrono::milliseconds drain,
                           std::uint64_t max_buffer_bytes) const;

  // ---- its process ----

  State state() const { return state_; }
  bool has_process() const {
    return state_ == State::kStarting || state_ == State::kRunning || state_ == State::kRetiring;
  }
  bool running() const { return state_ == State::kRunning && status_ && !expelled_; }
  bool expelled() const { return expelled_; }
  int pid() const { return pid_; }
  const std::shared_ptr<ipc::Channel>& channel() const { return channel_; }
  // Its process started, with the status record it publishes to and the channel to it.
  void started(std::unique_ptr<WorkerProcess> process, std::unique_ptr<ipc::StatusReader> status,
               std::shared_ptr<ipc::Channel> channel);
  // Its process could not be started; it gets its next try like one that exited.
  void failed_to_start();
  // Where the process it starts next parks its session should the supervisor die.
  void keep_record_file(StoreEntry entry) { record_file_ = std::move(entry); }
  // Watches the process's exit (once per process).
  void on_exit(std::function<void(int wait_status)> exited);
  // Nothing more it sends is read, and its process is killed; its exit follows.
  void stop();
  void kill();  // the process only: a worker that must not linger
  // Frames to its process, if it has one; dropped otherwise.
  void send(ipc::Frame frame) const;
  // Its process exited (and its last frames were read): what it held is let go. Its
  // sessions it leaves are in lose_sessions().
  void ended();
  // Its next process starts after a wait that grows with each quick death: `respawn`
  // runs then, unless cancel_restart() came first.
  void restart_after_backoff(boost::asio::io_context& io, std::function<void()> respawn);
  void cancel_restart();
  void retiring() { state_ = State::kRetiring; }
  void exited() { state_ = State::kExited; }

  // ---- its frames ----

  // Checks a frame against the contract and applies it to this worker's state.
  // `next_call_id`: no call at or beyond it was ever made.
  WorkerNews read(ipc::Frame&& frame, std::uint64_t next_call_id);
  // A look at it, as the registry's stall watch takes every heartbeat.
  WorkerHealth watch(const Timings& timings);

  // ---- its computer's sessions ----

  // Hands an attached computer's socket to its process (`socket` is taken only on kDone).
  HandOver hand_over(base::UniqueFd& socket, std::string upgrade_bytes, const std::string& peer,
                     const ServiceNotifier& store);
  // A process that died cannot write its computers' vm_detach lines: the lines for every
  // session it had attached (each attach has exactly one detach, whoever writes it), with
  // every session let go. `carried_lost`: a carried session among them was not taken up.
  std::vector<ipc::DetachEvent> lose_sessions(bool& carried_lost);
  // The attached session the status record names, else the newest attached one.
  const SessionRecord* live_session(std::uint64_t* generation) const;
  std::uint64_t generation() const { return generation_; }

  // ---- what the routes and `switchboard workers` see ----

  ComputerView view(std::chrono::milliseconds stale) const;
  WorkerRow row(std::chrono::milliseconds stale);
  // Beating within `stale` and keeping its record readable: its computer can be called.
  // A record torn for a moment (the worker publishing while it is read) is read from its
  // last whole state; only one torn for `stale` counts against it.
  bool responsive(std::chrono::milliseconds stale) const;

  // ---- switching in place (docs/architecture.md, "Switching") ----

  // Asked to park its session within `drain`; false when it has no process to ask.
  bool ask_to_park(std::chrono::milliseconds drain);
  // What it parked, with the supervisor's copy of the session's socket, once.
  std::optional<std::pair<CarriedSession, base::UniqueFd>> take_parked();
  bool parked() const { return parked_.has_value(); }
  // Generations go on across a switch.
  void continue_generations_from(std::uint64_t generation) {
    generation_ = std::max(generation_, generation);
  }
  // A session a switch carried in, for its first process to take up; `calls` are those it
  // holds. False when it has one already.
  bool carry_in(const CarriedSession& session, base::UniqueFd socket, StoreEntry stored,
                std::set<std::uint64_t> calls);
  // The carried session's calls, while it is not yet taken up.
  CarriedIn* carried() { return carried_ ? &*carried_ : nullptr; }
  // The kTakeUp frame for its process, once; nothing when there is none to send yet.
  // `failed`: the socket could not be copied (out of descriptors).
  std::optional<ipc::Frame> take_up_frame(bool& failed);
  // The carried session ended before it was taken up: the calls it held.
  std::set<std::uint64_t> drop_carried();
  // Calls for a carried session not yet taken up wait here, in order, while there is room
  // (a switch takes milliseconds: more means a flood).
  bool awaiting_take_up() const { return awaiting_take_up_; }
  bool room_to_hold() const;
  void hold(ipc::Frame call) { held_calls_.push_back(std::move(call)); }
  // The calls that waited, once the session was taken up or lost.
  std::vector<ipc::Frame> release_held();

 private:
  worker_news::Greeted greet();
  WorkerNews check_hello(const ipc::Hello& hello);
  WorkerNews check_event(const ipc::SessionEvent& event);
  WorkerNews check_taken_up(const ipc::TakenUpEvent& event);
  WorkerNews check_parked(ipc::Parked&& parked, std::uint64_t next_call_id);
  bool left_frame_unfinished(std::chrono::milliseconds limit);
  ipc::ComputerStatus read_status() const;
  const SessionRecord* session_named(std::uint64_t board_generation,
                                     std::uint64_t* generation) const;
  const ProcessFacts& recent_facts();

  // The computer it serves.
  std::string name_;
  Verifier verifier_;
  int max_inflight_ = config::kDefaultMaxInflight;
  bool sole_caller_ = false;
  std::uint64_t generation_ = 0;  // the last handed over; follows the verifier across respawns
  std::map<std::uint64_t, SessionRecord> sessions_;

  // Its process.
  State state_ = State::kQueued;
  std::unique_ptr<WorkerProcess> process_;
  int pid_ = 0;
  bool said_hello_ = false;
  std::string build_;      // as its hello said
  bool expelled_ = false;  // stopped for a violation; its exit is already explained
  std::shared_ptr<ipc::Channel> channel_;
  std::unique_ptr<ipc::StatusReader> status_;
  StoreEntry record_file_;
  std::chrono::milliseconds backoff_{100};
  std::unique_ptr<boost::asio::steady_timer> respawn_timer_;
  std::chrono::steady_clock::time_point started_at_;
  bool stall_reported_ = false;
  // The frame its channel was last seen inside (by number), and since when.
  std::uint64_t unfinished_frame_ = 0;
  std::chrono::steady_clock::time_point unfinished_since_;

  // Switching.
  std::optional<CarriedIn> carried_;
  bool awaiting_take_up_ = false;
  std::vector<ipc::Frame> held_calls_;
  bool parking_ = false;
  std::optional<CarriedSession> parked_;
  base::UniqueFd parked_socket_;

  // For /metrics (docs/metrics.md) and `switchboard workers`.
  int restarts_ = 0;
  std::uint64_t attaches_ = 0;
  std::uint64_t sessions_taken_up_ = 0;
  std::map<std::string, std::uint64_t> detaches_;  // by close code
  std::uint64_t stalls_ = 0;
  // Messages its computers' sessions dropped in processes that have exited: the status
  // record counts those of the running one only.
  std::uint64_t messages_dropped_before_ = 0;
  ProcessFacts facts_;  // of process `facts_pid_`, as read at `facts_read_at_`
  int facts_pid_ = 0;
  std::chrono::steady_clock::time_point facts_read_at_;
};

}  // namespace sb::supervisor
