// Northbound MCP (docs/protocol.md, "POST /mcp" to "Tasks"): one JSON-RPC message from a
// caller, already authenticated and resolved to a computer, answered locally or forwarded
// to that computer's worker. HTTP callers and pty attaches share this code.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "supervisor/bounds/reply_budget.hpp"
#include "supervisor/config/config.hpp"
#include "supervisor/http/types.hpp"
#include "supervisor/mcp/call_book.hpp"
#include "supervisor/mcp/call_scan.hpp"
#include "supervisor/mcp/task_book.hpp"
#include "supervisor/metrics/metrics.hpp"
#include "supervisor/routes/state.hpp"
#include "supervisor/workers/registry.hpp"

namespace sb::supervisor {

class AuditLog;

// Policy for one request, resolved before any frame is sent.
struct CallerContext {
  std::string caller;  // the client's or the attach's name; the audit calls it "principal"
  std::string computer;
  config::ToolList tools;
  int caller_cap = 0;  // 0: the default share
  bool wildcard = false;
  // Scopes cancellations and answers (docs/protocol.md, "Sessions"): the Mcp-Session-Id an
  // HTTP caller sent ("" for none), or one of the switchboard's own per pod socket.
  std::string session;
  // The caller's transport can pass on a large reply while it is still arriving
  // (docs/architecture.md, "Large replies"): an HTTP response can, a pod's WebSocket
  // message is written whole.
  bool reply_may_arrive = false;
};

struct McpServices {
  WorkerRegistry& workers;
  AuditLog& audit;
  CallBook& calls;
  TaskBook& tasks;
  ReplyBudget& replies;
  Metrics& metrics;
  std::shared_ptr<const config::Config> config;  // timeouts and audit_args, as of now
};

// The JSON text of a reply: `head` followed by `body`. A computer's reply arrives as one
// large string that only lacks the caller's id; sending the id as a separate head means
// that string is never copied on its way out.
struct ReplyText {
  std::string head;
  std::string body;
  ReplyBudget::Lease lease;  // a relayed reply's bytes, held until they are written
  // Instead of `body`, a large reply still arriving from its worker. Its first byte, the
  // opening brace, is never sent: `head` ends with the comma that takes its place.
  std::shared_ptr<ipc::ArrivingBody> arriving;
};

// The reply, or nothing for a notification or a response (HTTP 202).
using McpDone = std::function<void(std::optional<ReplyText>)>;
// A message for the caller while its call is in flight: a progress notification, a request
// the computer routed to it, or a notification the one-client rule lets through.
using McpMessage = std::function<void(ReplyText)>;

// Handles one message. `done` runs exactly once, unless the returned Abandon (empty when
// nothing is pending) is called first. `on_message` is empty when the caller cannot take
// messages during a call (an HTTP caller that does not accept event streams).
Abandon handle_mcp(const nlohmann::json& message, const CallerContext& context,
                   const McpServices& services, McpDone done, McpMessage on_message = {});
// The same for a plain tools/call read by the scanner (supervisor/call_scan.hpp): answered
// as handle_mcp() answers that request, with the caller's own params forwarded.
Abandon handle_tools_call(const ScannedToolCall& call, const CallerContext& context,
                          const McpServices& services, McpDone done, McpMessage on_message = {});

// A computer's notifications/tasks/status: to a call in flight of the client that owns the
// task, whose caller takes messages; otherwise dropped (docs/protocol.md, "Tasks").
void relay_task_status(const McpServices& services, const std::string& computer, std::string body);

// What the supervisor's state lends to northbound MCP, as of now.
McpServices mcp_services(const SupervisorState& state);

// The revisions `initialize` negotiates and MCP-Protocol-Version may name, oldest first.
bool supported_protocol_version(std::string_view version);
std::string supported_protocol_versions_text();

}  // namespace sb::supervisor
