#include "supervisor/mcp/task_book.hpp"

namespace sb::supervisor {

void TaskBook::record(const SessionKey& session, const std::string& task_id,
                      const std::string& caller) {
  Key key{session.computer, session.attached_at_ms, task_id};
  // A computer that reuses a task id for another caller hands the task over, never both.
  if (const auto [it, added] = owners_.insert_or_assign(key, caller); !added) return;
  order_.push_back(std::move(key));
  while (order_.size() > capacity_) {
    owners_.erase(order_.front());
    order_.pop_front();
  }
}

bool TaskBook::owns(const SessionKey& session, const std::string& task_id,
                    const std::string& caller) const {
  return owner(session, task_id) == caller;
}

std::optional<std::string> TaskBook::owner(const SessionKey& session,
                                           const std::string& task_id) const {
  const auto found = owners_.find(Key{session.computer, session.attached_at_ms, task_id});
  if (found == owners_.end()) return std::nullopt;
  return found->second;
}

std::vector<CarriedTask> TaskBook::entries() const {
  std::vector<CarriedTask> out;
  for (const auto& key : order_) {
    const auto& [computer, attached_at_ms, task_id] = key;
    out.push_back({.computer = computer,
                   .attached_at_ms = attached_at_ms,
                   .task_id = task_id,
                   .caller = owners_.at(key)});
  }
  return out;
}

void TaskBook::restore(const std::vector<CarriedTask>& entries) {
  for (const auto& entry : entries)
    record(SessionKey{entry.computer, entry.attached_at_ms}, entry.task_id, entry.caller);
}

}  // namespace sb::supervisor
