// The frames the supervisor sends a worker, each with its codec: the supervisor encodes,
// the worker decodes. Every meta is binary (meta_codec.hpp) and read strictly: a frame
// that is not exactly what its type allows is Malformed, never read with defaults. Only a
// supervisor of another build could send one, which the worker's hello rules out, so a
// worker that meets one leaves (docs/architecture.md, "The channel").
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "base/unique_fd.hpp"
#include "ipc/frame.hpp"
#include "ipc/messages.hpp"

namespace sb::ipc {

// The computer's label (applied to the live session too), the cap for the next attach,
// whether exactly one client can reach the computer, the worker's timers
// (shared/timings.hpp), and how long it may take to park its session when the supervisor
// is gone ([timeouts] drain_secs).
struct Configure {
  std::string computer;
  int max_inflight = 0;
  bool sole_caller = false;
  std::chrono::milliseconds handshake{0};
  std::chrono::milliseconds ping_interval{0};
  std::chrono::milliseconds heartbeat{0};
  std::chrono::milliseconds drain{0};
  // Bytes of frames the worker may hold for the supervisor before it stops reading its
  // computer ([limits] max_worker_buffer_mib).
  std::uint64_t max_buffer_bytes = 0;
};

// A computer's socket after its secret was checked, with what the supervisor read past the
// upgrade request (the request included): the worker completes the handshake from it.
struct Attach {
  base::UniqueFd socket;
  std::string peer;
  std::uint64_t generation = 0;
  int max_inflight = 0;
  std::string upgrade_bytes;
};

// One call: who asks, within what, and its params as the caller's own bytes.
struct Call {
  std::uint64_t call_id = 0;
  CallMeta meta;
  std::string params;
};

// The call ended early: free it and tell the computer why.
struct Cancel {
  std::uint64_t call_id = 0;
  std::string reason;
};

// A caller's response to the request the computer sent as `key` during the call.
struct Answer {
  std::uint64_t call_id = 0;
  std::uint64_t key = 0;
  std::string response_without_id;
};

// The call's reply has left the supervisor, or never will: its place in the caps is free.
struct Delivered {
  std::uint64_t call_id = 0;
};

// The switchboard is switching in place (docs/architecture.md, "Switching"): leave the
// computer's session at its next message boundary, within `drain`, answer with kParked and
// exit without closing the computer.
struct Park {
  std::chrono::milliseconds drain{0};
};

// A session an earlier worker parked: the computer's socket (by SCM_RIGHTS), the record it
// left (parked_session.hpp), and the calls in flight whose callers the supervisor still
// has; the others are cancelled toward the computer.
struct TakeUp {
  base::UniqueFd socket;
  std::vector<std::uint64_t> taken_up_calls;
  std::string record;
};

struct Revoke {};    // close the computer with 4003 and exit
struct Shutdown {};  // close the computer with 1001 and exit

using SupervisorFrame = std::variant<Configure, Attach, Call, Cancel, Answer, Delivered, Park,
                                     TakeUp, Revoke, Shutdown, Malformed>;

Frame encode(const Configure& configure);
Frame encode(Attach attach);
Frame encode(Call call);
Frame encode(const Cancel& cancel);
Frame encode(Answer answer);
Frame encode(const Delivered& delivered);
Frame encode(const Park& park);
Frame encode(TakeUp take_up);
Frame encode(Revoke);
Frame encode(Shutdown);

SupervisorFrame decode_supervisor_frame(Frame&& frame);

}  // namespace sb::ipc
