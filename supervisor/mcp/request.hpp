// What northbound MCP is handed with each caller's message and what it answers with
// (docs/protocol.md, "POST /mcp" to "Tasks"): the caller's policy, the process's services,
// and where the reply and any message during the call go. HTTP callers and pods alike.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "ipc/arriving_body.hpp"
#include "shared/log.hpp"
#include "supervisor/bounds/reply_budget.hpp"
#include "supervisor/config/config.hpp"
#include "supervisor/mcp/era.hpp"
#include "supervisor/switching/switch_state.hpp"
#include "supervisor/telemetry/span.hpp"

namespace sb::supervisor {

class AuditLog;
class CallBook;
class InputBook;
class Metrics;
class ToolBook;
class StreamBoard;
class SubscriptionBook;
class TaskBook;
class WorkerRegistry;

// Policy for one request, resolved before any frame is sent.
struct CallerContext {
  std::string caller;  // the client's or the pod's name; the audit calls it "principal"
  // For a caller signed in with an OAuth access token (docs/auth.md): its issuer and `sub`,
  // for the audit; "" for a static token or a pod.
  std::string oauth_issuer;
  std::string oauth_subject;
  std::string computer;
  config::NameList tools;
  config::UriPatterns resources;  // none unless granted
  config::NameList prompts;       // none unless granted
  int caller_cap = 0;             // 0: the default share
  bool wildcard = false;
  // Scopes cancellations and answers (docs/protocol.md, "Sessions"): the Mcp-Session-Id an
  // HTTP caller sent ("" for none), or one of the switchboard's own per pod socket.
  std::string mcp_session;
  // The era of the revision this message speaks: what its answers look like.
  Era era = Era::kHandshake;
  // The caller's transport can pass on a large reply while it is still arriving
  // (docs/architecture.md, "Large replies"): an HTTP response can, a pod's WebSocket
  // message is written whole.
  bool reply_may_arrive = false;
  // The request's span when it is traced (docs/observability.md): its trace's id and its
  // own, in hex, for the audit line of its call; "" otherwise.
  std::string trace_id;
  std::string span_id;
  // Switching (docs/architecture.md, "Switching"): the call this request already is when it
  // crossed a switch, taken up rather than sent again.
  std::optional<CarriedCall> carried;
};

// The process's parts that northbound MCP works with: one of each, owned by `serve`.
struct McpServices {
  WorkerRegistry& workers;
  AuditLog& audit;
  CallBook& calls;
  TaskBook& tasks;
  ReplyBudget& replies;
  Metrics& metrics;
  // A computer that answers tools/list with an error is told of at most once a minute:
  // its callers may list as often as they like.
  LogThrottle& tools_list_errors;
  SubscriptionBook& subscriptions;
  StreamBoard& streams;
  ToolBook& tool_book;  // learnt from tools/list, checked by routes/
  InputBook& inputs;    // input-required rounds awaiting their callers' retries
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
  // The code when the reply is a JSON-RPC error, the switchboard's or the computer's: a
  // 2026-07-28 caller's HTTP status follows it.
  std::optional<std::int64_t> error_code;
  // A tool's result that says it failed (`isError`), the computer's or the switchboard's
  // (a tool the grant does not allow, a computer not attached): what a span records.
  bool tool_error = false;
  RoundTrip round_trip;
  // What the switchboard did to answer a request it answered itself ("policy", "vm_status",
  // "initialize", "server/discover"): a child of the request's span. Empty otherwise.
  std::string_view local_step;
  // The switchboard's answer for a computer that is not attached: nothing reached it, so a
  // twin front may send the request to the other box (docs/twins.md, "Not attached here").
  bool not_attached = false;
};

// The reply, or nothing for a notification or a response (HTTP 202).
using McpDone = std::function<void(std::optional<ReplyText>)>;
// A message for the caller while its call is in flight: a progress notification, a request
// the computer routed to it, or a notification the one-client rule lets through.
using McpMessage = std::function<void(ReplyText)>;
// What each handler returns (switching/switch_state.hpp): its `abandon` ends the request
// early when its caller is gone, giving back at once what it holds.

// One caller's message to answer: who asks, with what, as of which config, and where the
// answer goes. `on_message` is empty when the caller cannot take messages during a call
// (an HTTP caller that does not accept event streams).
struct McpRequest {
  CallerContext context;
  const McpServices& services;
  std::shared_ptr<const config::Config> config;  // timeouts and audit_args, as of now
  McpDone done;
  McpMessage on_message;
};

}  // namespace sb::supervisor
