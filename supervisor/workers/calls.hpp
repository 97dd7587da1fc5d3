// What a call to a computer is, between the callers' side and the registry
// (registry.hpp): the request, its result, and the callbacks that carry them.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "ipc/messages.hpp"
#include "ipc/worker_frames.hpp"
#include "supervisor/switching/switch_state.hpp"

namespace sb::supervisor {

// A message from the computer for a call's caller, as a kMessage frame carried it.
using MessageCallback = std::function<void(const ipc::MessageMeta&, std::string body)>;

struct CallRequest {
  std::string caller;
  int caller_cap = 0;                            // 0: the default share of the socket's cap
  std::chrono::milliseconds timeout{60'000};     // restarted by each progress notification
  std::chrono::milliseconds max_total{600'000};  // never exceeded
  std::string method;
  std::string params_json;
  // Messages during the call go here; empty when the caller cannot take any.
  MessageCallback on_message;
  // The reply may come as CallResult::arriving, before its worker has sent all of it.
  bool reply_may_arrive = false;
  // A call that crossed a switch with its caller (docs/architecture.md, "Switching"): it
  // is in flight at the computer already, under this id, and is taken up, not sent.
  std::optional<CarriedCall> carried;
};

// A reply at least this large, to a call that allows it, is passed on as it arrives.
inline constexpr std::size_t kArrivingReplyFrom = 256 * 1024;

struct CallResult {
  ipc::CallStatus status = ipc::CallStatus::kDisconnected;
  std::size_t response_bytes = 0;
  std::string reply_without_id;  // the computer's reply object, its "id" removed
  // Instead of reply_without_id, for a large reply still arriving from the worker (only
  // when the request allowed it): the same bytes, filled as they come.
  std::shared_ptr<ipc::ArrivingBody> arriving;
  ipc::ReplyKind kind = ipc::ReplyKind::kOk;
  std::optional<std::int64_t> error_code;
  // While held, the worker keeps the call's place in the computer's caps: the reply is
  // still in the supervisor. Released when the reply has been written or dropped.
  std::shared_ptr<void> slot;
  // The worker's word on when the computer was sent the request, and when its answer began
  // and ended arriving (Unix nanoseconds, 0: not sent, or no answer), for the round trip's
  // spans.
  std::uint64_t sent_unix_nanos = 0;
  std::uint64_t first_byte_unix_nanos = 0;
  std::uint64_t replied_unix_nanos = 0;
};

using CallCallback = std::function<void(CallResult)>;

}  // namespace sb::supervisor
