// Plain HTTP request and response types, so that routing and MCP handling never see Beast.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ipc/arriving_body.hpp"
#include "supervisor/bounds/reply_budget.hpp"
#include "supervisor/switching/switch_state.hpp"

namespace sb::supervisor {

struct HttpRequest {
  std::string method;                        // "GET", "POST", ...
  std::string target;                        // path and query, as received
  std::optional<std::string> authorization;  // the first Authorization header
  // The DPoP header (RFC 9449), when exactly one came; `dpop_headers` says how many did.
  std::optional<std::string> dpop;
  int dpop_headers = 0;
  std::string peer;  // docs/protocol.md, "Peer label"
  std::string body;
  // MCP's headers (docs/protocol.md, "Revisions"), as sent.
  std::optional<std::string> origin;
  std::optional<std::string> mcp_session_id;    // Mcp-Session-Id
  std::optional<std::string> protocol_version;  // MCP-Protocol-Version
  std::optional<std::string> mcp_method;        // Mcp-Method (2026-07-28)
  std::optional<std::string> mcp_name;          // Mcp-Name (2026-07-28)
  std::optional<std::string> last_event_id;     // Last-Event-ID
  // W3C Trace Context, each when it came exactly once (docs/observability.md).
  std::optional<std::string> traceparent;
  std::optional<std::string> tracestate;
  // Each Mcp-Param-<Name> header (2026-07-28): <Name> as sent, and the value.
  std::vector<std::pair<std::string, std::string>> mcp_params;
  // The first of MCP-Protocol-Version, Mcp-Method, Mcp-Name and Mcp-Param-* that came more
  // than once, as sent: such a request is refused, never read by its first value.
  std::optional<std::string> repeated_mcp_header;
  bool accepts_event_stream = false;  // Accept lists text/event-stream
  // Switchboard-Twin: a front that tries the other box with what is not attached here
  // (docs/twins.md, "Not attached here").
  bool twin_front = false;
  // Switching (docs/architecture.md, "Switching"): the call this request already is when it
  // crossed a switch in flight, to be taken up rather than sent again.
  std::optional<CarriedCall> carried;
};

struct HttpResponse {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::string body_head;     // sent before `body`: see ReplyText
  ReplyBudget::Lease lease;  // a relayed reply's share of the budget, until it is written
  // Instead of `body`, a reply still arriving, written as it comes; its first byte is not
  // sent (see ReplyText).
  std::shared_ptr<ipc::ArrivingBody> arriving;
  // Resumable streams (docs/protocol.md, "Resumable streams"): the id of the response's
  // event when it ends an event stream; or, instead of a response, the end of the stream
  // before it, for its caller to resume with Last-Event-ID.
  std::string event_id;
  bool pauses_stream = false;
};

using Respond = std::function<void(HttpResponse)>;
// A message for the caller ahead of the response: the connection turns the response into an
// event stream at the first one. `head` then `body` is one JSON text (see ReplyText), sent
// as the event `id` unless it is empty. Both empty open the stream and send nothing, for a
// stream that waits for its first message; or, with an id, send a resumable stream's
// priming event.
using SendEvent = std::function<void(std::string head, std::string body, std::string id)>;
// Called by the connection when its caller hangs up before the response.
using OnHangUp = std::function<void()>;
// Handles one request (routes/ does): `respond` runs exactly once unless the returned
// Underway's `abandon` is called (when the caller hangs up); `send_event` may run before
// it, when the caller accepts an event stream. The call the request became, if it did,
// comes back with it.
using RouteRequest = std::function<Underway(const HttpRequest&, Respond, SendEvent)>;

// The path without its query string.
std::string_view request_path(std::string_view target);

HttpResponse text_response(int status, std::string body);
HttpResponse json_response(int status, std::string body);
HttpResponse empty_response(int status);
HttpResponse unauthorized_response();
HttpResponse no_such_computer_response();
HttpResponse post_only_response();
HttpResponse method_not_allowed_response(std::string allow);

}  // namespace sb::supervisor
