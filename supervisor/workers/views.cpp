// The registry's views: what the routes and `switchboard workers` see of each computer
// (registry.hpp). Reads the status board; never waits on a worker.
#include <algorithm>

#include "supervisor/workers/registry.hpp"
#include "supervisor/workers/worker.hpp"

namespace sb::supervisor {

std::shared_ptr<Worker> WorkerRegistry::find(std::string_view computer) const {
  for (const auto& worker : workers_) {
    if (worker->name() == computer) return worker;
  }
  return nullptr;
}

std::optional<ComputerView> WorkerRegistry::view(std::string_view computer) const {
  const auto worker = find(computer);
  if (!worker) return std::nullopt;
  return worker->view(timings_.heartbeat_stale);
}

std::shared_ptr<Worker> WorkerRegistry::find_by_verifier(const std::string& rendered) const {
  for (const auto& worker : workers_) {
    if (render_verifier(worker->verifier()) == rendered) return worker;
  }
  return nullptr;
}

std::vector<std::string> WorkerRegistry::names() const {
  std::vector<std::string> names;
  for (const auto& worker : workers_) names.push_back(worker->name());
  return names;
}

bool WorkerRegistry::any_ready() const {
  return std::any_of(workers_.begin(), workers_.end(), [this](const auto& worker) {
    return worker->view(timings_.heartbeat_stale).ready;
  });
}

bool WorkerRegistry::all_started() const {
  return std::all_of(workers_.begin(), workers_.end(),
                     [](const auto& worker) { return worker->state() == Worker::State::kRunning; });
}

std::vector<WorkerRow> WorkerRegistry::rows() const {
  std::vector<WorkerRow> rows;
  for (const auto& worker : workers_) rows.push_back(worker->row(timings_.heartbeat_stale));
  return rows;
}

}  // namespace sb::supervisor
