#include "supervisor/mcp/call_audit.hpp"

#include "shared/jsonrpc.hpp"
#include "supervisor/audit/audit_log.hpp"
#include "supervisor/mcp/reply_text.hpp"
#include "supervisor/mcp/tools.hpp"
#include "supervisor/metrics/metrics.hpp"

namespace sb::supervisor {
namespace {

constexpr std::size_t kMaxAuditArgsChars = 512;

// The first `limit` characters of `text` followed by an ellipsis, when it is longer.
std::string truncate_chars(std::string_view text, std::size_t limit) {
  std::size_t count = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) continue;
    if (count++ == limit) return std::string(text.substr(0, i)) + "\u2026";
  }
  return std::string(text);
}

// How the audit tells a call that ended without a reply, and the relay's code for it.
std::pair<std::string_view, int> without_reply(ipc::CallStatus status) {
  switch (status) {
    case ipc::CallStatus::kNotAttached:
      return {"not_attached", jsonrpc::kNotAttached};
    case ipc::CallStatus::kOverloaded:
      return {"overloaded", jsonrpc::kOverloaded};
    case ipc::CallStatus::kTimeout:
      return {"timeout", jsonrpc::kTimeout};
    case ipc::CallStatus::kReplied:
    case ipc::CallStatus::kDisconnected:
      break;
  }
  return {"disconnected", jsonrpc::kDisconnected};
}

}  // namespace

bool CallAudit::relayed(std::string_view outcome) const {
  if (tool == kStatusTool) return false;
  return outcome != "denied" && outcome != "not_attached" && outcome != "overloaded";
}

void CallAudit::write(std::string_view outcome, std::optional<std::int64_t> error_code,
                      std::size_t response_bytes) const {
  const auto elapsed = std::chrono::steady_clock::now() - started;
  if (kind == CallKind::kTool) {
    services.metrics.call_ended(CallEnd{.computer = computer,
                                        .caller = principal,
                                        .tool = tool_label,
                                        .outcome = outcome,
                                        .duration = elapsed,
                                        .reply_bytes = response_bytes,
                                        .forwarded = forwarded});
  }
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count();
  services.audit.write_call(CallRecord{.principal = principal,
                                       .oauth_issuer = oauth_issuer,
                                       .oauth_subject = oauth_subject,
                                       .trace_id = trace_id,
                                       .span_id = span_id,
                                       .computer = computer,
                                       .tool = tool,
                                       .kind = kind,
                                       .outcome = outcome,
                                       .error_code = error_code,
                                       .ms = ms,
                                       .response_bytes = response_bytes,
                                       .args = args,
                                       .relayed = relayed(outcome)});
}

void CallAudit::write_reply(ipc::ReplyKind kind, std::optional<std::int64_t> error_code,
                            std::size_t response_bytes) const {
  if (kind == ipc::ReplyKind::kRpcError) return write("rpc_error", error_code, response_bytes);
  write(kind == ipc::ReplyKind::kToolError ? "tool_error" : "ok", std::nullopt, response_bytes);
}

ReplyText audited_reply(const nlohmann::json& id, CallResult result,
                        const std::shared_ptr<const CallAudit>& audit) {
  const auto kind = result.kind;
  const auto error_code = result.error_code;
  const auto response_bytes = result.response_bytes;
  if (result.status != ipc::CallStatus::kReplied) {
    const auto [outcome, code] = without_reply(result.status);
    audit->write(outcome, code, 0);
    return relayed(id, std::move(result));
  }
  ReplyText text = relayed(id, std::move(result));
  if (text.arriving) {
    audit_when_arrived(*text.arriving, kind, error_code, response_bytes, audit);
  } else {
    audit->write_reply(kind, error_code, response_bytes);
  }
  return text;
}

void audit_when_arrived(ipc::ArrivingBody& body, ipc::ReplyKind kind,
                        std::optional<std::int64_t> error_code, std::size_t response_bytes,
                        std::shared_ptr<const CallAudit> audit) {
  body.follow([&body, kind, error_code, response_bytes, audit = std::move(audit)] {
    if (body.complete()) audit->write_reply(kind, error_code, response_bytes);
    if (body.failed()) audit->write("disconnected", jsonrpc::kDisconnected, 0);
  });
}

nlohmann::json audit_args(bool audit_args, std::optional<std::string_view> arguments_json) {
  if (!audit_args) return nullptr;
  if (!arguments_json) return "";
  return truncate_chars(*arguments_json, kMaxAuditArgsChars);
}

}  // namespace sb::supervisor
