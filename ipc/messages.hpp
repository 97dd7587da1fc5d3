// What the frames between supervisor and worker mean, beyond their type: the outcome of
// a forwarded call, shared by the worker that produces it and the supervisor that reads it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sb::ipc {

// How a forwarded call ended (docs/protocol.md, "Calls").
enum class CallStatus {
  kReplied,       // the computer answered; the body is its reply without "id"
  kNotAttached,   // no ready socket: nothing was sent
  kOverloaded,    // a computer-wide or per-caller cap was full: nothing was sent
  kTimeout,       // sent, no answer in time
  kDisconnected,  // sent, then the socket closed
};

std::string_view to_string(CallStatus status);
std::optional<CallStatus> call_status_from(std::string_view text);

// How a computer's reply reads, for the audit line (docs/protocol.md, "Calls"): the worker
// scans every reply anyway, so the supervisor never has to parse a large one.
enum class ReplyKind { kOk, kRpcError, kToolError };

// The "meta" part of a kReply frame.
struct CallOutcome {
  CallStatus status = CallStatus::kReplied;
  std::size_t response_bytes = 0;  // size of the computer's reply as received
  ReplyKind kind = ReplyKind::kOk;
  std::optional<std::int64_t> error_code;  // error.code of an rpc_error, when an integer
};

std::string encode_outcome(const CallOutcome& outcome);
std::optional<CallOutcome> decode_outcome(std::string_view meta);

// What a kMessage frame carries for the caller of a call in flight (docs/protocol.md,
// "Messages during a call").
enum class MessageKind {
  kProgress,      // notifications/progress, its token already the caller's own
  kRequest,       // a request from the computer, its "id" cut out; `key` names it
  kNotification,  // any other notification, routed by the one-client rule
};

struct MessageMeta {
  MessageKind kind = MessageKind::kProgress;
  std::uint64_t key = 0;  // for kRequest: what the caller's answer is matched by
};

std::string encode_message_meta(const MessageMeta& meta);
std::optional<MessageMeta> decode_message_meta(std::string_view meta);

}  // namespace sb::ipc
