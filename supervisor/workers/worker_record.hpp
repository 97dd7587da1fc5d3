// The supervisor's record of one worker: its process, its channel and status record, and
// the sessions the supervisor handed it (its calls in flight are in calls_in_flight.hpp). Shared by
// the files that make up the registry (registry.hpp); nothing else sees it.
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/spawn.hpp"
#include "ipc/channel.hpp"
#include "ipc/status_board.hpp"
#include "shared/deadline_queue.hpp"
#include "shared/service_notify.hpp"
#include "supervisor/config/config.hpp"
#include "supervisor/switching/switch_state.hpp"
#include "supervisor/workers/registry.hpp"
#include "supervisor/workers/worker_process.hpp"

namespace sb::supervisor {

using namespace std::chrono_literals;

// A descriptor's entry in the service manager's store (docs/architecture.md,
// "Switching"), taken out of the store when this goes, unless kept for the next process.
class StoreEntry {
 public:
  StoreEntry() = default;
  StoreEntry(const ServiceNotifier* store, std::string name)
      : store_(store), name_(std::move(name)) {}
  StoreEntry(StoreEntry&& other) noexcept
      : store_(std::exchange(other.store_, nullptr)), name_(std::move(other.name_)) {}
  StoreEntry& operator=(StoreEntry&& other) noexcept {
    if (this != &other) {
      forget();
      store_ = std::exchange(other.store_, nullptr);
      name_ = std::move(other.name_);
    }
    return *this;
  }
  ~StoreEntry() { forget(); }

  // The entry stays in the store: the next process takes it up.
  void keep() { store_ = nullptr; }

 private:
  void forget() {
    if (store_ && !name_.empty()) store_->forget(name_);
    store_ = nullptr;
  }
  const ServiceNotifier* store_ = nullptr;
  std::string name_;
};

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

// What /proc says of a worker's process (views.cpp).
struct ProcessFacts {
  std::int64_t resident_kib = 0;
  bool sandboxed = false;  // no_new_privs and a seccomp filter
};

struct WorkerRecord {
  // kQueued: waiting in the start queue for its first process (registry.cpp).
  enum class State { kQueued, kStarting, kRunning, kRestarting, kRetiring, kExited };

  std::string name;
  Verifier verifier;
  int max_inflight = config::kDefaultMaxInflight;
  bool sole_caller = false;
  std::uint64_t generation = 0;  // the last handed over; follows the verifier across respawns
  std::map<std::uint64_t, SessionRecord> sessions;
  State state = State::kQueued;
  std::unique_ptr<WorkerProcess> process;
  int pid = 0;
  bool said_hello = false;
  std::string build;  // as its hello said
  std::optional<CarriedIn> carried;
  // A carried session not yet taken up: calls for it wait here, in order, rather than
  // find their computer not attached; sent once the worker reports vm_resumed.
  bool awaiting_take_up = false;
  std::vector<ipc::Frame> held_calls;
  // Switching: asked to park; what it parked (its socket is then in `sessions` no more).
  bool parking = false;
  std::optional<CarriedSession> parked;
  base::UniqueFd parked_socket;
  // Where its process parks its session should the supervisor die, in the service
  // manager's store; only with a store.
  StoreEntry record_file;
  bool expelled = false;  // killed for a violation; its exit is already explained
  std::shared_ptr<ipc::Channel> channel;
  std::unique_ptr<ipc::StatusReader> status;
  int restarts = 0;
  // For /metrics (docs/metrics.md): sessions it reported attached, its sessions' ends by
  // close code, and the times it stalled.
  std::uint64_t attaches = 0;
  std::uint64_t sessions_taken_up = 0;  // sessions it took up after a switch
  std::map<std::string, std::uint64_t> detaches;
  std::uint64_t stalls = 0;
  // Messages its computers' sessions dropped in processes that have exited: the status
  // record counts those of the running one only.
  std::uint64_t messages_dropped_before = 0;
  ProcessFacts facts;  // of process `facts_pid`, as read at `facts_read_at`
  int facts_pid = 0;
  std::chrono::steady_clock::time_point facts_read_at;
  std::chrono::milliseconds backoff{100};
  std::chrono::steady_clock::time_point started_at;
  std::unique_ptr<boost::asio::steady_timer> respawn_timer;
  bool stall_reported = false;
  // The frame its channel was last seen inside (by number), and since when.
  std::uint64_t unfinished_frame = 0;
  std::chrono::steady_clock::time_point unfinished_since;

  bool has_process() const {
    return state == State::kStarting || state == State::kRunning || state == State::kRetiring;
  }
  // Beating within `stale` and keeping its record readable: its computer can be called.
  // A record torn for a moment (the worker publishing while it is read) is read from its
  // last whole state; only one torn for `stale` counts against it.
  bool responsive(std::chrono::milliseconds stale) const {
    return status && status->heartbeat_age_ms() <= stale.count() &&
           status->torn_for_ms() < stale.count();
  }
  // The status record, with the peer and generation taken from the supervisor's own record
  // of the live session (the one the worker names, if it was handed over and attached).
  ipc::ComputerStatus read_status() const;
  // The attached session the status record names, else the newest attached one.
  const SessionRecord* live_session(std::uint64_t* generation) const;
  // The same, given the generation the status record names.
  const SessionRecord* session_named(std::uint64_t board_generation,
                                     std::uint64_t* generation) const;
};

// The record of a worker for a configured computer, not yet spawned.
inline std::shared_ptr<WorkerRecord> make_worker_record(const config::Computer& computer) {
  auto worker = std::make_shared<WorkerRecord>();
  worker->name = computer.name;
  worker->verifier = computer.secret;
  worker->max_inflight = computer.max_inflight;
  worker->sole_caller = computer.sole_caller;
  return worker;
}

}  // namespace sb::supervisor
