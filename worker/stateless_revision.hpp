// A computer that speaks only the stateless revision 2026-07-28 (docs/protocol.md,
// "Handshake"): how the worker recognises one when its `initialize` is refused, finds it
// with `server/discover` instead, and writes every request toward it with the `_meta` that
// revision requires, whichever revision the caller speaks.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace sb::worker {

// Whether an error reply to `initialize` is 2026-07-28's "unsupported protocol version"
// (-32022) with the stateless revision among the ones it names as supported.
bool refused_for_stateless_revision(const nlohmann::json& reply);

// The params of the worker's `server/discover`: the revision's `_meta`, declaring nothing
// the worker itself could answer.
nlohmann::json discover_params();

// The server info of a `server/discover` result that lists the stateless revision among
// its supported versions (as JSON text: an object, or "null" when it gives none), or
// nothing when the result does not list it.
std::optional<std::string> discovered_server(const nlohmann::json& result);

// `params_json` (a request's params as the caller wrote them, an object) with the `_meta`
// members 2026-07-28 requires added where the caller sent none: the protocol version
// (always that revision), the client's capabilities (none, unless `askable` or `tasks`,
// below) and the client's info (the switchboard's);
// and the log level a `logging/setLevel` set on this socket (`log_level`, "" for none),
// which that revision asks for on each request instead. Whatever else the caller's `_meta`
// holds (a progress token, trace context, its own log level) is kept.
// With `askable`, a caller that declared no capabilities of its own is declared able to
// take elicitation, sampling and roots requests (the worker asks them of it on the call's
// stream); the result says whether it was. With `tasks` (a handshake-era caller's request
// about tasks), it is declared to speak the tasks extension, and a tools/call's `task`,
// which asks for one in the handshake era, is taken out (docs/protocol.md, "Tasks across
// eras").
bool require_stateless_meta(std::string& params_json, std::string_view log_level, bool askable,
                            bool tasks);

// Whether a request's params (JSON text) name 2026-07-28 as their revision in `_meta`: its
// caller speaks the stateless era.
bool names_stateless_revision(std::string_view params_json);

// The level a `logging/setLevel` request's params name, or "" when they name none of the
// levels MCP has.
std::string log_level_of(std::string_view params_json);

// The level a 2026-07-28 request's `_meta["io.modelcontextprotocol/logLevel"]` names, or ""
// when it names none of the levels MCP has.
std::string requested_log_level(std::string_view params_json);

}  // namespace sb::worker
