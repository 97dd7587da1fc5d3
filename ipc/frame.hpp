// One IPC frame: a fixed header, a small JSON "meta" part and a raw body. Bodies (call
// parameters, a computer's reply) cross as bytes and are never re-serialised on the way.
#pragma once

#include <cstdint>
#include <string>

#include "ipc/unique_fd.hpp"

namespace sb::ipc {

enum class FrameType : std::uint16_t {
  // supervisor -> worker
  kConfigure = 1,  // meta: {"name", "max_inflight"}: label and limit for the next attach
  kAttach = 2,     // fd + meta: {"peer", "generation", "max_inflight"}; body: upgrade bytes
  kCall = 3,       // call_id; meta: {"caller", "caller_cap", "timeout_ms", "method"}; body: params
  kCancel = 4,     // call_id: the caller went away; drop the call and release its share
  kRevoke = 5,     // close the computer with 4003 and exit
  kShutdown = 6,   // close the computer with 1001 and exit
  // worker -> supervisor
  kHello = 101,  // meta: {"pid"}: the worker is up and has mapped its status record
  kReply = 102,  // call_id; meta: CallOutcome fields; body: the reply without its "id"
  kEvent = 103,  // body: one audit line's JSON object (without "ts")
};

struct Frame {
  FrameType type{};
  std::uint64_t call_id = 0;
  std::string meta;  // JSON text or empty
  std::string body;  // raw bytes
  UniqueFd fd;       // passed with SCM_RIGHTS when valid
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
