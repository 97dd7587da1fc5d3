// Which caller created which task on which computer (docs/protocol.md, "Tasks"). A task id
// is the computer's, and every caller of that computer could guess or see one; so a task is
// reachable only by the caller that created it through the switchboard, and only while the
// computer session that created it lasts. Bounded: the oldest record goes first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "supervisor/mcp/session_key.hpp"
#include "supervisor/switching/switch_state.hpp"

namespace sb::supervisor {

class TaskBook {
 public:
  explicit TaskBook(std::size_t capacity = 4096) : capacity_(capacity) {}

  void record(const SessionKey& session, const std::string& task_id, const std::string& caller);
  bool owns(const SessionKey& session, const std::string& task_id, const std::string& caller) const;
  // The caller that created the task, if it is recorded.
  std::optional<std::string> owner(const SessionKey& session, const std::string& task_id) const;
  std::size_t size() const { return owners_.size(); }

  // For a switch in place (docs/architecture.md, "Switching"): every record, oldest first,
  // and the records of an earlier process taken back in that order.
  std::vector<CarriedTask> entries() const;
  void restore(const std::vector<CarriedTask>& entries);

 private:
  using Key = std::tuple<std::string, std::int64_t, std::string>;  // computer, attached, id
  std::size_t capacity_;
  std::map<Key, std::string> owners_;  // -> caller
  std::deque<Key> order_;              // oldest first
};

}  // namespace sb::supervisor
