// Tasks under the switchboard (docs/protocol.md, "Tasks"): a task belongs to the client
// whose tools/call created it, for as long as the computer's session that created it
// lasts. tasks/get, tasks/result and tasks/cancel reach the computer only for a task the
// caller owns, tasks/list shows only its own, and a task's status notification goes to a
// call in flight of its owner.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "shared/jsonrpc.hpp"
#include "supervisor/mcp/exchange.hpp"
#include "supervisor/mcp/task_book.hpp"
#include "supervisor/workers/registry.hpp"

namespace sb::supervisor {

inline constexpr std::string_view kTasksExtension = jsonrpc::kTasksExtension;

// tasks/get, tasks/update, tasks/result or tasks/cancel, named by `method`.
Underway task_request(const Exchange& exchange, const std::string& method);
Underway tasks_list(const Exchange& exchange);

// Whether the request's _meta declares the tasks extension among its client's
// capabilities: its tools/call may then create a task (2026-07-28).
bool declares_tasks_extension(const Exchange& exchange);

// Whether a 2026-07-28 caller's tools/call of `tool`, which declares the tasks extension,
// asks a handshake-era computer for a task: in that era by `params.task`, which the
// switchboard adds for a tool whose list says it may run as one (docs/protocol.md, "Tasks
// across eras").
bool asks_for_handshake_task(const Exchange& exchange, std::string_view tool);

// For a tools/call with params.task, or one that declares the tasks extension: records
// the task its reply creates as the caller's.
// Empty when no session is attached (the call will not reach the computer).
std::function<void(const CallResult&)> task_recorder(const Exchange& exchange);

// The computer's tasks/list reply less every task of another client; nothing when the
// reply is not a list, which then goes to the caller as it came.
std::optional<nlohmann::json> filter_task_list(const std::string& reply_without_id,
                                               const nlohmann::json& id, const TaskBook& tasks,
                                               const SessionKey& session,
                                               const std::string& caller);

// A computer's notifications/tasks/status (an object, as `body` reads): to a call in
// flight of the client that owns the task, whose caller takes messages; otherwise dropped.
void relay_task_status(const McpServices& services, const std::string& computer,
                       const nlohmann::json& message, const std::string& body);

}  // namespace sb::supervisor
