// The registry's configuration side: handing attached sockets to workers, and a reload
// applied as a diff by verifier (registry.hpp).
#include <fcntl.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "ipc/supervisor_frames.hpp"
#include "supervisor/audit/audit_log.hpp"
#include "supervisor/workers/registry.hpp"
#include "supervisor/workers/worker_record.hpp"

namespace sb::supervisor {

using json = nlohmann::json;

namespace {

// Sockets handed over that never reported an attach (an upgrade that failed) are
// forgotten past this many, oldest first.
constexpr std::size_t kMaxUnattachedSessions = 16;

void forget_oldest_unattached(std::map<std::uint64_t, SessionRecord>& sessions) {
  const auto unattached = std::count_if(sessions.begin(), sessions.end(),
                                        [](const auto& entry) { return !entry.second.attached; });
  if (static_cast<std::size_t>(unattached) <= kMaxUnattachedSessions) return;
  const auto oldest = std::find_if(sessions.begin(), sessions.end(),
                                   [](const auto& entry) { return !entry.second.attached; });
  sessions.erase(oldest);
}

}  // namespace

void WorkerRegistry::apply(const std::vector<config::Computer>& computers) {
  std::vector<std::shared_ptr<WorkerRecord>> next;
  std::vector<std::shared_ptr<WorkerRecord>> previous = std::move(workers_);
  workers_.clear();
  for (const auto& computer : computers) {
    auto match = std::find_if(previous.begin(), previous.end(), [&](const auto& worker) {
      return worker && worker->verifier == computer.secret;
    });
    if (match == previous.end()) {
      next.push_back(make_worker_record(computer));
      queued_.push_back(next.back());
      continue;
    }
    auto worker = std::move(*match);
    if (worker->name != computer.name) {
      std::uint64_t generation = 0;
      const bool attached = worker->live_session(&generation) != nullptr;
      audit_.write("computer_renamed", {{"from", worker->name},
                                        {"to", computer.name},
                                        {"attached", attached},
                                        {"generation", generation}});
      worker->name = computer.name;
    }
    worker->max_inflight = computer.max_inflight;
    worker->sole_caller = computer.sole_caller;
    configure(*worker);
    next.push_back(std::move(worker));
  }
  workers_ = next;
  // Written here rather than by the worker so that every line of a reload precedes its
  // config_reloaded line.
  for (auto& removed : previous) {
    if (!removed) continue;
    std::uint64_t generation = 0;
    if (const auto* session = removed->live_session(&generation)) {
      audit_.write(
          "vm_revoked",
          {{"computer", removed->name}, {"peer", session->peer}, {"generation", generation}});
    }
    retire(removed, /*revoke=*/true);
  }
  start_queued();
}

void WorkerRegistry::retire(const std::shared_ptr<WorkerRecord>& worker, bool revoke) {
  if (!worker->has_process()) {
    worker->state = WorkerRecord::State::kExited;  // restarting: simply never respawned
    return;
  }
  worker->state = WorkerRecord::State::kRetiring;
  retiring_.push_back(worker);
  worker->channel->send(revoke ? ipc::encode(ipc::Revoke{}) : ipc::encode(ipc::Shutdown{}));
}

bool WorkerRegistry::knows_secret(const Verifier& presented) const {
  std::vector<Verifier> verifiers;
  for (const auto& worker : workers_) verifiers.push_back(worker->verifier);
  return find_verifier(verifiers, presented).has_value();
}

HandOver WorkerRegistry::hand_over(const Verifier& presented, base::UniqueFd& socket,
                                   std::string upgrade_bytes, const std::string& peer) {
  std::vector<Verifier> verifiers;
  for (const auto& worker : workers_) verifiers.push_back(worker->verifier);
  const auto index = find_verifier(verifiers, presented);
  if (!index) return HandOver::kRevoked;
  WorkerRecord& worker = *workers_[*index];
  if (!worker.channel || !worker.channel->is_open()) return HandOver::kWorkerUnavailable;
  ++worker.generation;
  // The supervisor's own copy, for a switch in place (worker_record.hpp). Without one (out
  // of descriptors) the session is served all the same; it just cannot be carried.
  SessionRecord& session = worker.sessions[worker.generation] = SessionRecord{
      .peer = peer, .socket = base::UniqueFd(::fcntl(socket.get(), F_DUPFD_CLOEXEC, 0))};
  // Kept by the service manager too, should this process die (docs/architecture.md,
  // "Switching").
  if (session.socket.valid() && store_.has_store()) {
    const std::string name = stored_socket_name(worker.name, worker.generation);
    store_.store(name, session.socket.get());
    session.stored = StoreEntry(&store_, name);
  }
  forget_oldest_unattached(worker.sessions);
  worker.channel->send(ipc::encode(ipc::Attach{.socket = std::move(socket),
                                               .peer = peer,
                                               .generation = worker.generation,
                                               .max_inflight = worker.max_inflight,
                                               .upgrade_bytes = std::move(upgrade_bytes)}));
  return HandOver::kDone;
}

}  // namespace sb::supervisor
