// What a computer offered its client among the `capabilities` of its initialize result,
// as bits: the worker reads them at the handshake, publishes them on the status board and
// carries them across a switch; the supervisor passes on to callers only what is offered.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

namespace sb::ipc::offer {

inline constexpr std::uint32_t kLogging = 1u << 0;
inline constexpr std::uint32_t kResources = 1u << 1;
inline constexpr std::uint32_t kResourceSubscribe = 1u << 2;  // resources.subscribe
inline constexpr std::uint32_t kPrompts = 1u << 3;
inline constexpr std::uint32_t kCompletions = 1u << 4;
// extensions["io.modelcontextprotocol/tasks"]: the 2026-07-28 tasks extension (SEP-2663).
inline constexpr std::uint32_t kTasksExtension = 1u << 5;
// tools.listChanged, prompts.listChanged: the computer announces changes to those lists.
inline constexpr std::uint32_t kToolsListChanged = 1u << 6;
inline constexpr std::uint32_t kPromptsListChanged = 1u << 7;
// Not a capability: the computer speaks only the stateless revision 2026-07-28. It refused
// the worker's `initialize` with -32022 and was found by `server/discover` instead
// (docs/protocol.md, "Handshake"), so every request toward it carries that revision's
// `_meta`.
inline constexpr std::uint32_t kStatelessOnly = 1u << 8;
// tasks (2025-11-25): tasks.requests.tools.call, a tool call may run as a task; tasks.list
// and tasks.cancel, those methods are served.
inline constexpr std::uint32_t kTasksToolCall = 1u << 9;
inline constexpr std::uint32_t kTasksList = 1u << 10;
inline constexpr std::uint32_t kTasksCancel = 1u << 11;
inline constexpr std::uint32_t kAll = (1u << 12) - 1;

// The bits of an initialize result's `capabilities` (an object, or anything else: none).
std::uint32_t of_capabilities(const nlohmann::json& capabilities);

}  // namespace sb::ipc::offer
