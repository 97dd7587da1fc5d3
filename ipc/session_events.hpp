// What a worker may report about its own sessions (docs/protocol.md, "Audit log"): the
// whole vocabulary, one table in session_events.cpp that both sides use. A worker sends an
// event as a kEvent frame whose body is one JSON object {"event", ...fields}; the
// supervisor decodes it strictly (exactly the event's fields, each of its type, at most
// 4 KiB), checks the generations against its own record, and writes the audit line,
// stamped with the computer's name and the time.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <variant>

namespace sb::ipc {

struct AttachEvent {
  std::string peer;
  std::uint64_t generation = 0;
};

struct TakeoverEvent {
  std::string old_peer;
  std::uint64_t old_generation = 0;
  std::string new_peer;
  std::uint64_t new_generation = 0;
};

struct DetachEvent {
  std::string peer;
  std::uint64_t generation = 0;
  std::uint64_t code = 0;
  std::string reason;
  std::uint64_t attached_for_secs = 0;
};

// A session an earlier worker parked goes on in this one (docs/architecture.md,
// "Switching"): no new attach, and its vm_attach still waits for its one vm_detach.
struct TakenUpEvent {
  std::string peer;
  std::uint64_t generation = 0;
};

using SessionEvent = std::variant<AttachEvent, TakeoverEvent, DetachEvent, TakenUpEvent>;

inline constexpr std::size_t kMaxEventBytes = 4096;
inline constexpr std::size_t kMaxEventText = 512;  // a peer label or a close reason

// "vm_attach", "vm_takeover", "vm_detach" or "vm_resumed": the audit line's event.
std::string_view event_name(const SessionEvent& event);
// The audit line's fields, without the event's name.
nlohmann::json event_fields(const SessionEvent& event);

// The kEvent body: {"event": name, ...fields}.
std::string encode_event_body(const SessionEvent& event);
// Nothing, and `reason` set, when the body is not exactly one event of the table.
std::optional<SessionEvent> decode_event_body(std::string_view body, std::string& reason);

}  // namespace sb::ipc
