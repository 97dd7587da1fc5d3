// The metas of the frames every call makes (kCall, kReply, kMessage): what a call asks,
// how it ended, and what a message during it is, shared by the side that writes them and
// the side that reads them (the frames themselves: supervisor_frames.hpp,
// worker_frames.hpp).
//
// Binary, as every meta but kHello's (meta_codec.hpp), decoded strictly (every byte
// accounted for, every enum and flag in range), because the supervisor reads a worker's
// kReply and kMessage as the less trusted side's words (docs/architecture.md, "The
// channel").
#pragma once

#include <chrono>
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

// The "meta" part of a kCall frame.
struct CallMeta {
  std::string caller;
  int caller_cap = 0;  // 0: the default share
  std::chrono::milliseconds timeout{0};
  std::chrono::milliseconds max_total{0};
  std::string method;
  bool stream = false;  // the caller can take messages during the call
};

std::string encode_call_meta(const CallMeta& meta);
std::optional<CallMeta> decode_call_meta(std::string_view meta);

std::string_view to_string(CallStatus status);

// How a computer's reply reads, for the audit line (docs/protocol.md, "Calls"): the worker
// scans every reply anyway, so the supervisor never has to parse a large one.
enum class ReplyKind { kOk, kRpcError, kToolError };

// The "meta" part of a kReply frame.
struct CallOutcome {
  CallStatus status = CallStatus::kReplied;
  std::size_t response_bytes = 0;  // size of the computer's reply as received
  ReplyKind kind = ReplyKind::kOk;
  std::optional<std::int64_t> error_code;  // error.code of an rpc_error, when an integer
  // When the request was written for the computer, when the first and the last of its
  // reply's bytes arrived, in Unix time (nanoseconds; 0: not sent, or no reply), for the
  // spans of the round trip (docs/observability.md). A call timed out or cut off by a
  // closing socket has only the first. The worker's word: the supervisor keeps them within
  // the call's own time.
  std::uint64_t sent_unix_nanos = 0;
  std::uint64_t first_byte_unix_nanos = 0;
  std::uint64_t replied_unix_nanos = 0;
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
