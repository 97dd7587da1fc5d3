// Names one session of a computer: the computer, and when the session attached (as the
// status board shows it). What lives only as long as that session (a task, a
// subscription) is recorded under it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace sb::supervisor {

class WorkerRegistry;

struct SessionKey {
  std::string computer;
  std::int64_t attached_at_ms = 0;
};

// The computer's session attached now; nothing when none is.
std::optional<SessionKey> attached_session(const WorkerRegistry& workers,
                                           const std::string& computer);

}  // namespace sb::supervisor
