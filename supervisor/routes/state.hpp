// What the supervisor's request handlers share: the config as of now, the client table,
// the workers, the audit log, the calls callers may still name, who owns which task and the
// metrics. One per process, owned by `serve`, passed by reference.
#pragma once

#include <memory>

#include "supervisor/audit/audit_log.hpp"
#include "supervisor/bounds/reply_budget.hpp"
#include "supervisor/callers/client_table.hpp"
#include "supervisor/config/config.hpp"
#include "supervisor/mcp/call_book.hpp"
#include "supervisor/mcp/task_book.hpp"
#include "supervisor/metrics/metrics.hpp"
#include "supervisor/workers/registry.hpp"

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
