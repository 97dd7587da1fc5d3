// A tool call's one record, in the audit log and the metrics alike (docs/protocol.md,
// "Audit log"; docs/metrics.md): who called which tool on which computer, how it ended,
// how long it took and how large its reply was.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "ipc/arriving_body.hpp"
#include "ipc/messages.hpp"
#include "supervisor/audit/audit_log.hpp"
#include "supervisor/mcp/request.hpp"
#include "supervisor/workers/registry.hpp"

namespace sb::supervisor {

struct CallAudit {
  McpServices services;
  std::string principal;
  std::string oauth_issuer;  // "" unless signed in with OAuth
  std::string oauth_subject;
  std::string trace_id;  // the request's span, when traced (hex; "" otherwise)
  std::string span_id;
  std::string computer;
  std::string tool;        // or the resource's URI, or the prompt's name
  std::string tool_label;  // for metrics: a name from the config, or "other"
  // Only tool calls are counted in the metrics (docs/metrics.md); every kind is audited.
  CallKind kind = CallKind::kTool;
  nlohmann::json args;  // null when `audit_args` is off
  std::chrono::steady_clock::time_point started;
  bool forwarded = false;

  void write(std::string_view outcome, std::optional<std::int64_t> error_code,
             std::size_t response_bytes) const;
  // Whether a call that ended so reached its computer: not when refused (denied, not
  // attached, overloaded) or answered by the switchboard (vm_status).
  bool relayed(std::string_view outcome) const;
  // A computer's reply, by what the worker's scan found in it: ok, rpc_error or tool_error.
  void write_reply(ipc::ReplyKind kind, std::optional<std::int64_t> error_code,
                   std::size_t response_bytes) const;
};

// The caller's reply to a call that was forwarded, audited: a computer's reply once it has
// all arrived, or the relay's own error (-32001 when no computer is attached) at once.
ReplyText audited_reply(const nlohmann::json& id, CallResult result,
                        const std::shared_ptr<const CallAudit>& audit);

// A reply passed on as it arrives is audited once it has: a worker that dies half-way
// through it has disconnected its caller, who gets a cut-off response.
void audit_when_arrived(ipc::ArrivingBody& body, ipc::ReplyKind kind,
                        std::optional<std::int64_t> error_code, std::size_t response_bytes,
                        std::shared_ptr<const CallAudit> audit);

// What the audit line shows of a call's arguments: nothing when `audit_args` is off, ""
// when there are none, else their JSON text cut to 512 characters.
nlohmann::json audit_args(bool audit_args, std::optional<std::string_view> arguments_json);

}  // namespace sb::supervisor
