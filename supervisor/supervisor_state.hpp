// What the supervisor's request handlers share: the config as of now, the client table,
// the workers and the audit log. One per process, owned by `serve`, passed by reference.
#pragma once

#include <memory>

#include "shared/config.hpp"
#include "supervisor/audit_log.hpp"
#include "supervisor/client_table.hpp"
#include "supervisor/worker_registry.hpp"

namespace sb::supervisor {

struct SupervisorState {
  std::shared_ptr<const config::Config> config;
  std::shared_ptr<const ClientTable> clients;
  WorkerRegistry& workers;
  AuditLog& audit;
};

}  // namespace sb::supervisor
