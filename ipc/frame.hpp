// One IPC frame: a fixed header, a small "meta" part and a raw body. Bodies (call
// parameters, a computer's reply) cross as bytes and are never re-serialised on the way.
// Each type has its codec; the supervisor kills a worker whose frame is not exactly what
// its type allows (worker_frames.hpp).
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
inline constexpr int kProtocolVersion = 7;
// Unique to one configured build of the project: both programs of one build share it.
std::string_view build_id();

// Each type's meaning and codec: supervisor_frames.hpp for the first group, worker_frames.hpp
// for the second.
enum class FrameType : std::uint16_t {
  // supervisor -> worker
  kConfigure = 1,
  kAttach = 2,  // carries a descriptor, as kTakeUp does
  kCall = 3,
  kCancel = 4,
  kRevoke = 5,
  kShutdown = 6,
  kAnswer = 7,
  kDelivered = 8,
  kPark = 9,
  kTakeUp = 10,
  // worker -> supervisor
  kHello = 101,
  kReply = 102,
  kEvent = 103,
  kMessage = 104,
  kParked = 105,
};

struct Frame {
  FrameType type{};
  std::uint64_t call_id = 0;
  std::string meta;   // as its type's codec writes it, or empty
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

// A frame that is not what its type allows, and why: the words of the log line that
// reports it (docs/architecture.md, "Trust boundaries").
struct Malformed {
  std::string reason;
};

// A message between a computer and its worker is at most this, either way: a caller's
// request larger than this cannot be passed on.
inline constexpr std::uint32_t kMaxMessageSize = 16u << 20;
inline constexpr std::uint32_t kMaxMetaSize = 1u << 20;
// A computer's message and headroom for framing.
inline constexpr std::uint32_t kMaxBodySize = kMaxMessageSize + (1u << 20);

}  // namespace sb::ipc
