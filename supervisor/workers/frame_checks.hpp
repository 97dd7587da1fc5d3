// What a worker may say to the supervisor, checked frame by frame. A worker parses bytes
// from its computer, the least trusted party of all, so the supervisor treats it as less
// trusted too: every frame is held to the set below (type, fields and their types, sizes),
// and anything else is a violation for which the worker is killed and respawned
// (docs/architecture.md, "Trust boundaries"). The checks that need the registry's state
// (a Hello only first, call ids and generations the supervisor issued) are the registry's.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>

#include "ipc/frame.hpp"
#include "ipc/messages.hpp"

namespace sb::supervisor {

struct HelloFrame {
  std::int64_t pid = 0;
  std::int64_t protocol = 0;
  std::string build;
};

struct ReplyFrame {
  std::uint64_t call_id = 0;
  ipc::CallOutcome outcome;
  std::string body;
  std::shared_ptr<ipc::ArrivingBody> arriving;  // instead of body, when handed over early
};

struct MessageFrame {
  std::uint64_t call_id = 0;  // 0: a task's status, for whichever client owns the task
  ipc::MessageMeta meta;
  std::string body;
};

// An audit event about one of the worker's own sessions. The worker says what happened;
// the supervisor adds the computer's name and the time, and checks the generations.
struct SessionEvent {
  enum class Kind { kAttach, kTakeover, kDetach };
  Kind kind = Kind::kAttach;
  std::string name;       // "vm_attach", "vm_takeover" or "vm_detach"
  nlohmann::json fields;  // exactly the fields of that event, each of its type
};

struct Violation {
  std::string reason;  // for the log line: what the worker did wrong
};

using WorkerFrame = std::variant<HelloFrame, ReplyFrame, MessageFrame, SessionEvent, Violation>;

inline constexpr std::size_t kMaxEventBytes = 4096;
inline constexpr std::size_t kMaxEventText = 512;  // a peer label or a close reason

WorkerFrame check_worker_frame(ipc::Frame&& frame);

}  // namespace sb::supervisor
