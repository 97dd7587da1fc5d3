// The registry's views: what the routes and `switchboard workers` see of each computer
// (registry.hpp). Reads the status board; never waits on a worker.
#include <fstream>

#include "supervisor/workers/registry.hpp"
#include "supervisor/workers/worker_record.hpp"

namespace sb::supervisor {
namespace {

// From /proc/PID/status: memory, and the sandbox the worker entered (docs/architecture.md,
// "Sandbox"): NoNewPrivs 1 and Seccomp 2 (a filter).
ProcessFacts process_facts(int pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  ProcessFacts facts;
  bool no_new_privs = false;
  bool filtered = false;
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) facts.resident_kib = std::atoll(line.c_str() + 6);
    if (line.rfind("NoNewPrivs:", 0) == 0) no_new_privs = std::atoi(line.c_str() + 11) == 1;
    if (line.rfind("Seccomp:", 0) == 0) filtered = std::atoi(line.c_str() + 8) == 2;
  }
  facts.sandboxed = no_new_privs && filtered;
  return facts;
}

// However often rows are asked for (a scrape, `switchboard workers`), each worker's /proc
// is read at most once a second: its memory does not move faster than anyone looks.
const ProcessFacts& recent_facts(WorkerRecord& worker) {
  constexpr auto kFactsFor = std::chrono::seconds(1);
  const auto now = std::chrono::steady_clock::now();
  if (worker.facts_pid != worker.pid || now - worker.facts_read_at >= kFactsFor) {
    worker.facts = process_facts(worker.pid);
    worker.facts_pid = worker.pid;
    worker.facts_read_at = now;
  }
  return worker.facts;
}

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

const SessionRecord* WorkerRecord::live_session(std::uint64_t* generation) const {
  return session_named(status ? status->read().generation : 0, generation);
}

const SessionRecord* WorkerRecord::session_named(std::uint64_t board_generation,
                                                 std::uint64_t* generation) const {
  const auto named = sessions.find(board_generation);
  if (named != sessions.end() && named->second.attached) {
    *generation = named->first;
    return &named->second;
  }
  for (auto it = sessions.rbegin(); it != sessions.rend(); ++it) {
    if (it->second.attached) {
      *generation = it->first;
      return &it->second;
    }
  }
  return nullptr;
}

ipc::ComputerStatus WorkerRecord::read_status() const {
  ipc::ComputerStatus current = status->read();
  // A state the worker cannot mean reads as no computer at all.
  if (current.state > ipc::ComputerState::kReady) current.state = ipc::ComputerState::kIdle;
  // The record just read names the live session: one read of the board, not two.
  std::uint64_t generation = 0;
  const SessionRecord* session = session_named(current.generation, &generation);
  current.peer = session ? session->peer : std::string();
  current.generation = generation;
  return current;
}

std::shared_ptr<WorkerRecord> WorkerRegistry::find(std::string_view computer) const {
  for (const auto& worker : workers_) {
    if (worker->name == computer) return worker;
  }
  return nullptr;
}

std::optional<ComputerView> WorkerRegistry::view(std::string_view computer) const {
  const auto worker = find(computer);
  if (!worker) return std::nullopt;
  return view_of(*worker);
}

ComputerView WorkerRegistry::view_of(const WorkerRecord& worker) const {
  ComputerView view{.name = worker.name};
  if (worker.state != WorkerRecord::State::kRunning || !worker.status || worker.expelled)
    return view;
  view.status = worker.read_status();
  view.attached = view.status.state != ipc::ComputerState::kIdle;
  view.ready = view.status.state == ipc::ComputerState::kReady &&
               worker.responsive(timings_.heartbeat_stale);
  return view;
}

std::vector<std::string> WorkerRegistry::names() const {
  std::vector<std::string> names;
  for (const auto& worker : workers_) names.push_back(worker->name);
  return names;
}

bool WorkerRegistry::any_ready() const {
  for (const auto& worker : workers_) {
    const auto current = view(worker->name);
    if (current && current->ready) return true;
  }
  return false;
}

bool WorkerRegistry::all_started() const {
  for (const auto& worker : workers_) {
    if (worker->state != WorkerRecord::State::kRunning) return false;
  }
  return true;
}

std::vector<WorkerRow> WorkerRegistry::rows() const {
  std::vector<WorkerRow> rows;
  for (const auto& worker : workers_) {
    WorkerRow row{.computer = worker->name,
                  .pid = worker->has_process() ? worker->pid : 0,
                  .max_in_flight = static_cast<std::uint32_t>(worker->max_inflight),
                  .restarts = worker->restarts,
                  .attaches = worker->attaches,
                  .detaches = worker->detaches,
                  .stalls = worker->stalls,
                  .build = worker->build,
                  .sessions_taken_up = worker->sessions_taken_up};
    row.messages_dropped = worker->messages_dropped_before;
    if (worker->state == WorkerRecord::State::kRestarting || worker->expelled) {
      row.state = "restarting";
    } else if (worker->state != WorkerRecord::State::kRunning || !worker->status) {
      row.state = "starting";
    } else {
      const auto status = worker->read_status();
      row.torn_reads = worker->status->torn_reads();
      row.messages_dropped += status.messages_dropped;
      row.in_flight = status.in_flight;
      row.max_in_flight = status.max_in_flight ? status.max_in_flight
                                               : static_cast<std::uint32_t>(worker->max_inflight);
      row.attached = status.state != ipc::ComputerState::kIdle;
      if (row.attached) row.attached_for_secs = (now_ms() - status.attached_at_ms) / 1000;
      std::uint64_t generation = 0;
      const SessionRecord* session = worker->session_named(status.generation, &generation);
      if (session && session->taken_up) {
        row.taken_up_at_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                 session->taken_up_at.time_since_epoch())
                                 .count();
      }
      if (!worker->responsive(timings_.heartbeat_stale)) {
        row.state = "stalled";
      } else {
        row.state = status.state == ipc::ComputerState::kReady         ? "ready"
                    : status.state == ipc::ComputerState::kHandshaking ? "handshaking"
                                                                       : "idle";
      }
    }
    if (row.pid) {
      const auto& facts = recent_facts(*worker);
      row.resident_kib = facts.resident_kib;
      row.sandboxed = facts.sandboxed;
    }
    rows.push_back(row);
  }
  return rows;
}

}  // namespace sb::supervisor
