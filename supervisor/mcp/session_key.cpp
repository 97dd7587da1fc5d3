#include "supervisor/mcp/session_key.hpp"

#include "supervisor/workers/registry.hpp"

namespace sb::supervisor {

std::optional<SessionKey> attached_session(const WorkerRegistry& workers,
                                           const std::string& computer) {
  const auto view = workers.view(computer);
  if (!view || !view->attached) return std::nullopt;
  return SessionKey{computer, view->status.attached_at_ms};
}

}  // namespace sb::supervisor
