// A result the switchboard writes or rewrites itself, as a caller of each era must get it
// (docs/protocol.md, "Eras"): for a 2026-07-28 caller with the members its revision
// requires (`resultType` on each, and `ttlMs` and `cacheScope` on a list), for a caller of
// an older revision without them, whichever revision the computer answered in.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "supervisor/mcp/era.hpp"

namespace sb::supervisor {

// `result` as a caller of `era` gets it. Stateless: `resultType: "complete"` unless it has
// a type of the revision's already ("complete" or "input_required"): anything else a
// computer wrote is replaced. Handshake: none of the 2026-07-28 members.
nlohmann::json complete(nlohmann::json result, Era era);

// A list result as a caller of `era` gets it. Stateless: `resultType` "complete", whatever
// the computer said (a list is never interim); `ttlMs` 0 (not to be cached) unless the
// computer gave a count of milliseconds; and `cacheScope` "private" when the list was
// narrowed for one caller, whatever the computer said (a shared cache must not serve it to
// another), or when it said nothing, or anything but "public" or "private". Handshake: none
// of the three.
void shape_list(nlohmann::json& result, bool narrowed, Era era);

// A computer's reply to `method` (a JSON object without its id) as a caller of `era` must
// get it, whichever revision the computer answered in. Stateless: `resultType` kept when it
// is one the method may have ("complete"; "input_required" on tools/call, resources/read
// and prompts/get; "task" on tools/call), else "complete"; and a resources/read result's
// `ttlMs` and `cacheScope` as a list's are, never narrowed. Handshake: none of the three.
// A task (a tools/call that created one, tasks/get, tasks/cancel) takes the shape of the
// caller's era, whichever the computer answered in (docs/protocol.md, "Tasks across eras").
// The bytes are left as they are when nothing needs changing, and so is an error.
void shape_reply(std::string& reply_without_id, std::string_view method, Era era);

}  // namespace sb::supervisor
