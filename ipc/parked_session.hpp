// A computer's session as one worker leaves it and another takes it up, when the switchboard
// switches in place (docs/architecture.md, "Switching"). The old worker writes it at a
// message boundary, the supervisor checks it against its own record, the new worker reads
// it and goes on where the old one stopped. Old and new may be of different builds, so the
// layout has a version of its own (not the IPC protocol's), and it is read strictly: a
// record that is not exactly right costs its computer a redial, never a process.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ipc/offers.hpp"

namespace sb::ipc {

// Raised whenever the layout or the meaning of a field changes. Version 1 carried the
// offers in one byte, version 2 no listen and no log level, version 3 no call's retry; a
// worker still reads them all, so that an upgrade across the change keeps its computers
// attached.
inline constexpr std::uint64_t kParkedSessionVersion = 4;
// Bounds on what a record may hold: a session has at most 64 calls in flight and 16
// requests routed to callers; what the socket read past the last message is a frame
// header and a read's worth of bytes.
inline constexpr std::size_t kMaxParkedSessionBytes = 4u << 20;
inline constexpr std::size_t kMaxParkedCalls = 64;
inline constexpr std::size_t kMaxParkedRoutes = 16;
inline constexpr std::size_t kMaxUnreadBytes = 64 * 1024;
inline constexpr std::size_t kMaxRecordText = 4096;  // a peer, a caller, an id, a token
// A call's request as a retry would send it again: carried only up to this size (a larger
// one crosses without, and is not asked for after the switch).
inline constexpr std::size_t kMaxParkedRetryBytes = 16 * 1024;
// What a worker follows for a computer that speaks only 2026-07-28 (one listen): at most
// this many URIs, each of at most the bytes a subscription's URI may have.
inline constexpr std::size_t kMaxParkedListenUris = 256;
inline constexpr std::size_t kMaxListenUriBytes = 8 * 1024;

// A time on the steady clock, which is CLOCK_MONOTONIC: one clock for every process of
// the machine's boot, so a deadline means the same in the old worker and the new one.
using SteadyTime = std::chrono::steady_clock::time_point;

// One call in flight at the computer: its id on the computer's socket and the supervisor's
// call id, whose caller it is, and its deadlines.
struct ParkedCall {
  std::uint64_t id = 0;
  std::uint64_t call_id = 0;
  std::string caller;
  bool stream = false;
  std::string progress_token;  // the caller's own, as JSON text; "" for none
  std::chrono::milliseconds timeout{0};
  SteadyTime deadline{};
  SteadyTime last_moment{};
  // A call a 2026-only computer may answer input-required: its method and params as sent,
  // for the retry once its caller has answered, and the rounds asked so far ("" for none).
  std::string ask_method;
  std::string ask_params;
  std::uint64_t ask_rounds = 0;
};

// A request the computer sent during a call, waiting for its caller's answer.
struct ParkedRoute {
  std::uint64_t key = 0;
  std::uint64_t pending_id = 0;  // the call it was routed to (its id on the socket)
  std::string original_id;       // the computer's id, as JSON text
};

struct ParkedSession {
  std::uint64_t generation = 0;
  std::string peer;
  int max_inflight = 0;
  std::int64_t attached_at_ms = 0;  // wall clock, as the status board shows it
  SteadyTime attached_at{};         // for attached_for_secs
  std::string server_json = "null";
  std::uint32_t offers = 0;   // offer:: bits, as the status board has them
  std::uint64_t next_id = 1;  // ids on the computer's socket are never reused
  std::uint64_t next_route_key = 1;
  std::vector<ParkedCall> calls;
  std::vector<ParkedRoute> routed;
  // A computer that speaks only 2026-07-28: the URIs it is asked to follow, the listen sent
  // for them last and the acknowledged one (ids on the socket; 0: none), and the log level a
  // logging/setLevel set ("" for none).
  std::vector<std::string> listen_uris;
  std::uint64_t newest_listen = 0;
  std::uint64_t active_listen = 0;
  std::string log_level;
  // Bytes read from the socket and not yet handed to the WebSocket stream, starting at a
  // frame boundary.
  std::string unread;
};

std::string encode(const ParkedSession& record);
// Nothing, and `why` set, unless `bytes` is exactly one record of this version (or of
// version 1 or 2) whose fields agree with each other (ids below next_id and unique, routes
// naming calls held, tokens and ids that are JSON of the right kind, every size within its
// bound).
std::optional<ParkedSession> decode_parked_session(std::string_view bytes, std::string& why);

}  // namespace sb::ipc
