// The registry's configuration side: handing attached sockets to workers, and a reload
// applied as a diff by verifier (registry.hpp).
#include <algorithm>
#include <nlohmann/json.hpp>

#include "ipc/supervisor_frames.hpp"
#include "supervisor/audit/audit_log.hpp"
#include "supervisor/workers/registry.hpp"
#include "supervisor/workers/worker.hpp"

namespace sb::supervisor {

void WorkerRegistry::apply(const std::vector<config::Computer>& computers) {
  std::vector<std::shared_ptr<Worker>> next;
  std::vector<std::shared_ptr<Worker>> previous = std::move(workers_);
  workers_.clear();
  for (const auto& computer : computers) {
    auto match = std::find_if(previous.begin(), previous.end(), [&](const auto& worker) {
      return worker && worker->verifier() == computer.secret;
    });
    if (match == previous.end()) {
      next.push_back(std::make_shared<Worker>(computer));
      queued_.push_back(next.back());
      continue;
    }
    auto worker = std::move(*match);
    std::uint64_t generation = 0;
    const bool attached = worker->live_session(&generation) != nullptr;
    if (const auto old_name = worker->update(computer)) {
      audit_.write("computer_renamed", {{"from", *old_name},
                                        {"to", computer.name},
                                        {"attached", attached},
                                        {"generation", generation}});
    }
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
          {{"computer", removed->name()}, {"peer", session->peer}, {"generation", generation}});
    }
    retire(removed, /*revoke=*/true);
  }
  start_queued();
}

void WorkerRegistry::retire(const std::shared_ptr<Worker>& worker, bool revoke) {
  if (!worker->has_process()) {
    worker->exited();  // restarting: simply never respawned
    return;
  }
  worker->retiring();
  retiring_.push_back(worker);
  worker->send(revoke ? ipc::encode(ipc::Revoke{}) : ipc::encode(ipc::Shutdown{}));
}

bool WorkerRegistry::knows_secret(const Verifier& presented) const {
  std::vector<Verifier> verifiers;
  for (const auto& worker : workers_) verifiers.push_back(worker->verifier());
  return find_verifier(verifiers, presented).has_value();
}

HandOver WorkerRegistry::hand_over(const Verifier& presented, base::UniqueFd& socket,
                                   std::string upgrade_bytes, const std::string& peer) {
  std::vector<Verifier> verifiers;
  for (const auto& worker : workers_) verifiers.push_back(worker->verifier());
  const auto index = find_verifier(verifiers, presented);
  if (!index) return HandOver::kRevoked;
  return workers_[*index]->hand_over(socket, std::move(upgrade_bytes), peer, store_);
}

}  // namespace sb::supervisor
