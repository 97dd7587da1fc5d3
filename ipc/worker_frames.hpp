// The frames a worker sends the supervisor, each with its codec: the worker encodes, the
// supervisor decodes, strictly, because a worker is the less trusted side
// (docs/architecture.md, "Trust boundaries"): anything but exactly what a type allows is
// Malformed, and costs the worker its life. The checks that need the supervisor's state
// (a Hello only first, call ids and generations it issued) are the registry's.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <variant>

#include "ipc/arriving_body.hpp"
#include "ipc/frame.hpp"
#include "ipc/messages.hpp"
#include "ipc/session_events.hpp"

namespace sb::ipc {

// First and exactly once: the worker is up and has mapped its status record. Its meta is
// JSON, the one that never changes, so that a worker of another build can still be read
// and refused for it.
struct Hello {
  std::int64_t pid = 0;
  std::int64_t protocol = 0;
  std::string build;
};

// How a call ended; the body, only for a computer's answer, is its reply without its id.
struct Reply {
  std::uint64_t call_id = 0;
  CallOutcome outcome;
  std::string body;
  std::shared_ptr<ArrivingBody> arriving;  // instead of body, when handed over early
};

// A message from the computer for the caller of a call in flight; call id 0: a task's
// status, for whichever client owns the task.
struct Message {
  std::uint64_t call_id = 0;
  MessageMeta meta;
  std::string body;
};

// The answer to kPark: the record of the session the worker left at a message boundary
// (parked_session.hpp), or an empty body when it had none to leave. The worker exits next.
struct Parked {
  std::string record;
};

using WorkerFrame = std::variant<Hello, Reply, Message, SessionEvent, Parked, Malformed>;

Frame encode(const Hello& hello);
Frame encode(Reply reply);
Frame encode(Message message);
Frame encode(const SessionEvent& event);
Frame encode(Parked parked);

WorkerFrame decode_worker_frame(Frame&& frame);

}  // namespace sb::ipc
