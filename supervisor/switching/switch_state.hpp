// What crosses a switch in place besides the descriptors themselves (docs/architecture.md,
// "Switching"): the old supervisor writes it into a memory file that the new one finds among
// the descriptors it is handed, by the name "state". Plain data and its codec; the old
// process may be of another build, so the layout has a version of its own, and it is read
// as strictly as anything a worker sends: a state that does not decode is no state, and the
// new supervisor starts as after a crash.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sb::supervisor {

inline constexpr std::uint64_t kSwitchStateVersion = 1;
// A switch carries every caller's connection with the request it is answering, which
// [limits] may let grow to 64 MiB each; the file is bounded all the same.
inline constexpr std::size_t kMaxSwitchStateBytes = std::size_t{1} << 30;
inline constexpr std::size_t kMaxCarriedText = 4096;  // a name, a peer, a build id, a reason

using SteadyTime = std::chrono::steady_clock::time_point;

// A call in flight that crosses with its caller's connection: its id between the
// processes, when it started (for its audit line), and whether its response had already
// become an event stream (its head written).
struct CarriedCall {
  std::uint64_t call_id = 0;
  SteadyTime started{};
  bool streaming = false;
};

// What a caller's request became once handled, handed back to its transport: how to end it
// early when its caller is gone (empty: there is nothing to end), and the call it became at
// its computer, which a switch in place carries with the caller's connection.
struct Underway {
  std::function<void()> abandon;
  std::optional<CarriedCall> call;
  // When it was handed to its worker (Unix nanoseconds; 0: it was not), for its span.
  std::uint64_t forwarded_unix_nanos = 0;
};

// A caller's connection: its socket by descriptor name, the bytes to read from it first (a
// request not yet answered, whole, and whatever followed it), and the call that request
// is, when it was in flight.
struct CarriedConnection {
  std::string socket;
  std::string bytes;
  std::optional<CarriedCall> call;
};

// A computer's session its worker parked: whose (by verifier, as the config writes it),
// which, its socket by descriptor name, and the worker's record of it
// (ipc/parked_session.hpp), passed on as it is to the next worker.
struct CarriedSession {
  std::string verifier;
  std::string computer;  // its name then; the config now may call it otherwise
  std::uint64_t generation = 0;
  std::string peer;
  std::int64_t attached_at_ms = 0;  // wall clock
  std::string socket;
  std::string record;
};

// A computer's last generation, by verifier: generations go on across switches.
struct CarriedGeneration {
  std::string verifier;
  std::uint64_t generation = 0;
};

// A request the computer sent during a call, routed to its caller under the
// switchboard's id and not answered yet (supervisor/mcp/call_book.hpp).
struct CarriedRoute {
  std::string routed_id;  // as JSON text
  std::uint64_t call_id = 0;
  std::uint64_t key = 0;
};

// A task a caller created (supervisor/mcp/task_book.hpp).
struct CarriedTask {
  std::string computer;
  std::int64_t attached_at_ms = 0;
  std::string task_id;
  std::string caller;
};

// One caller's subscription to one resource (docs/protocol.md, "Subscriptions").
struct CarriedSubscription {
  std::string computer;
  std::int64_t attached_at_ms = 0;
  std::string uri;
  std::string caller;
  std::string mcp_session;
};

// A computer attached when the switch began whose session did not cross, and why.
struct LostSession {
  std::string computer;
  std::string why;
};

struct SwitchState {
  std::string build;                   // the old build's id
  SteadyTime started{};                // when the switch began (the steady clock is one per boot)
  std::uint64_t switches = 0;          // made by this service so far, this one included
  std::uint64_t sessions_resumed = 0;  // sessions carried by earlier switches
  std::uint64_t next_call_id = 1;
  std::vector<CarriedGeneration> generations;
  std::vector<CarriedSession> sessions;
  std::vector<LostSession> lost;
  std::vector<CarriedConnection> connections;
  std::vector<CarriedTask> tasks;
  std::vector<CarriedRoute> routes;
  std::uint64_t next_routed = 1;
  std::vector<CarriedSubscription> subscriptions;
  // The control connection that asked for the switch (`switchboard upgrade`), by
  // descriptor name; "" when a signal asked.
  std::string requester;
};

std::string encode(const SwitchState& state);
// Nothing, and `why` set, unless `bytes` is exactly one state of this version with every
// field within its bounds.
std::optional<SwitchState> decode_switch_state(std::string_view bytes, std::string& why);

}  // namespace sb::supervisor
