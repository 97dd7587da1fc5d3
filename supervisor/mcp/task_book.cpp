#include "supervisor/mcp/task_book.hpp"

namespace sb::supervisor {

void TaskBook::record(const SessionKey& session, const std::string& task_id,
                      const std::string& client) {
  Key key{session.computer, session.attached_at_ms, task_id};
  // A computer that reuses a task id for another client hands the task over, never both.
  if (const auto [it, added] = owners_.insert_or_assign(key, client); !added) return;
  order_.push_back(std::move(key));
  while (order_.size() > capacity_) {
    owners_.erase(order_.front());
    order_.pop_front();
  }
}

bool TaskBook::owns(const SessionKey& session, const std::string& task_id,
                    const std::string& client) const {
  return owner(session, task_id) == client;
}

std::optional<std::string> TaskBook::owner(const SessionKey& session,
                                           const std::string& task_id) const {
  const auto found = owners_.find(Key{session.computer, session.attached_at_ms, task_id});
  if (found == owners_.end()) return std::nullopt;
  return found->second;
}

}  // namespace sb::supervisor
