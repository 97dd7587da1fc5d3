// One IPC frame: a fixed header, a small "meta" part and a raw body. Bodies (call
// parameters, a computer's reply) cross as bytes and are never re-serialised on the way.
// The supervisor checks every frame a worker sends against the set below and kills a
// worker that sends anything else (supervisor/worker_frames.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "base/unique_fd.hpp"
#include "ipc/arriving_body.hpp"

namespace sb::ipc {

// Raised whenever a frame, a meta field or the status record changes meaning. A worker's
// kHello carries it and the build's id; the supervisor refuses a worker of another.
inline constexpr int kProtocolVersion = 3;
// Unique to one configured build of the project: both programs of one build share it.
std::string_view build_id();

enum class FrameType : std::uint16_t {
  // supervisor -> worker
  // meta: {"name", "max_inflight", "sole_client", "handshake_ms", "ping_interval_ms",
  // "heartbeat_ms"}: the label (applied to the live session too), the cap for the next
  // attach, whether exactly one client can reach the computer, and the timers (timings.hpp)
  kConfigure = 1,
  kAttach = 2,  // fd + meta: {"peer", "generation", "max_inflight"}; body: upgrade bytes
  // call_id; meta: a CallMeta (binary, ipc/messages.hpp); body: params
  kCall = 3,
  kCancel = 4,    // call_id; meta: {"reason"}: the call ended early; free it, tell the computer
  kRevoke = 5,    // close the computer with 4003 and exit
  kShutdown = 6,  // close the computer with 1001 and exit
  // call_id; meta: {"key"}; body: the caller's response to a routed request, without "id"
  kAnswer = 7,
  // call_id: the call's reply (a kReplied kReply) has left the supervisor, or never will;
  // its place in the computer's caps is free from now on
  kDelivered = 8,
  // worker -> supervisor
  // meta: {"pid", "protocol", "build"}: the worker is up and has mapped its status record
  kHello = 101,
  kReply = 102,  // call_id; meta: a CallOutcome (binary); body: the reply without its "id"
  // body: a JSON object {"event", ...fields} about the worker's own sessions; the supervisor
  // checks it and adds the computer's name and the time (supervisor/worker_frames.hpp)
  kEvent = 103,
  // call_id; meta: a MessageMeta (binary); body: a message from the computer for that call's
  // caller (a progress notification with the caller's token, a request without its "id",
  // or a notification). call_id 0: a task's status, for whichever client owns the task
  kMessage = 104,
};

struct Frame {
  FrameType type{};
  std::uint64_t call_id = 0;
  std::string meta;   // JSON text, a binary meta of ipc/messages.hpp, or empty
  std::string body;   // raw bytes
  base::UniqueFd fd;  // passed with SCM_RIGHTS when valid
  // Instead of `body`, for a large body handed over before it has all arrived
  // (Channel::hand_over_large_bodies); never sent.
  std::shared_ptr<ArrivingBody> arriving;
};

// The wire header, in host byte order: both ends are on one machine.
struct WireHeader {
  std::uint32_t meta_size;
  std::uint32_t body_size;
  std::uint64_t call_id;
  std::uint16_t type;
  std::uint16_t has_fd;
  std::uint32_t reserved;
};
static_assert(sizeof(WireHeader) == 24);

inline constexpr std::uint32_t kMaxMetaSize = 1u << 20;
// A computer's frame is at most 16 MiB; the rest is headroom for framing.
inline constexpr std::uint32_t kMaxBodySize = 17u << 20;

}  // namespace sb::ipc
