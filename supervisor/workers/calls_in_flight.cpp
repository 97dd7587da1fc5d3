#include "supervisor/workers/calls_in_flight.hpp"

#include <utility>

namespace sb::supervisor {

bool CallsInFlight::add(std::uint64_t call_id, const std::shared_ptr<Worker>& worker,
                        InFlightCall call) {
  return calls_.try_emplace(call_id, Entry{worker, worker.get(), std::move(call)}).second;
}

InFlightCall* CallsInFlight::find(std::uint64_t call_id, const Worker& worker) {
  const auto found = calls_.find(call_id);
  const bool at_worker =
      found != calls_.end() && found->second.at == &worker && !found->second.worker.expired();
  return at_worker ? &found->second.call : nullptr;
}

std::shared_ptr<Worker> CallsInFlight::owner_of(std::uint64_t call_id) const {
  const auto found = calls_.find(call_id);
  return found == calls_.end() ? nullptr : found->second.worker.lock();
}

std::optional<InFlightCall> CallsInFlight::take(std::uint64_t call_id) {
  const auto found = calls_.find(call_id);
  if (found == calls_.end()) return std::nullopt;
  InFlightCall call = std::move(found->second.call);
  calls_.erase(found);
  return call;
}

std::vector<InFlightCall> CallsInFlight::take_all_at(const Worker& worker) {
  std::vector<InFlightCall> taken;
  for (auto entry = calls_.begin(); entry != calls_.end();) {
    if (entry->second.at != &worker) {
      ++entry;
      continue;
    }
    taken.push_back(std::move(entry->second.call));
    entry = calls_.erase(entry);
  }
  return taken;
}

}  // namespace sb::supervisor
