// What the supervisor's request handlers share: the config as of now, the client table,
// the workers, the audit log, the calls callers may still name, who owns which task and the
// metrics. One per process, owned by `serve`, passed by reference.
#pragma once

#include <memory>

#include "shared/config.hpp"
#include "supervisor/audit_log.hpp"
#include "supervisor/call_book.hpp"
#include "supervisor/client_table.hpp"
#include "supervisor/metrics.hpp"
#include "supervisor/reply_budget.hpp"
#include "supervisor/task_book.hpp"
#include "supervisor/worker_registry.hpp"

namespace sb::supervisor {

struct SupervisorState {
  std::shared_ptr<const config::Config> config;
  std::shared_ptr<const ClientTable> clients;
  WorkerRegistry& workers;
  AuditLog& audit;
  CallBook& calls;
  TaskBook& tasks;
  ReplyBudget& replies;
  Metrics& metrics;
};

}  // namespace sb::supervisor
