// The supervisor's services with no worker running: what the unit tests of northbound MCP
// and of the pod dialer run against. A computer named in a request is never attached.
#pragma once

#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <optional>

#include "supervisor/audit/audit_log.hpp"
#include "supervisor/bounds/reply_budget.hpp"
#include "supervisor/mcp/call_book.hpp"
#include "supervisor/mcp/input_book.hpp"
#include "supervisor/mcp/request.hpp"
#include "supervisor/mcp/stream_board.hpp"
#include "supervisor/mcp/subscription_book.hpp"
#include "supervisor/mcp/task_book.hpp"
#include "supervisor/mcp/tool_book.hpp"
#include "supervisor/metrics/metrics.hpp"
#include "supervisor/workers/registry.hpp"

namespace sb::supervisor {

struct ServicesWithoutWorkers {
  // Audit lines go to `audit_path`, or to stdout when there is none.
  ServicesWithoutWorkers(boost::asio::io_context& io,
                         std::optional<std::filesystem::path> audit_path)
      : audit(io, std::move(audit_path)),
        // No computer is configured, so the registry opens a program it never runs.
        workers(io, "/bin/true", audit),
        streams(io.get_executor(),
                static_cast<std::size_t>(config::Limits{}.max_streams_per_caller)) {}

  AuditLog audit;
  WorkerRegistry workers;
  CallBook calls;
  TaskBook tasks;
  ReplyBudget replies{config::Limits{}.max_reply_buffer_bytes};
  Metrics metrics;
  LogThrottle tools_list_errors;
  SubscriptionBook subscriptions{static_cast<std::size_t>(config::Limits{}.max_subscriptions)};
  StreamBoard streams;
  ToolBook tool_book;
  InputBook inputs;
  McpServices services{workers,           audit,         calls,   tasks,     replies, metrics,
                       tools_list_errors, subscriptions, streams, tool_book, inputs};
};

}  // namespace sb::supervisor
