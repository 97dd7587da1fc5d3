// The members the 2026-07-28 revision requires of a result, on every result the switchboard
// writes or rewrites itself (docs/protocol.md, "Revisions"): `resultType` on each, and
// `ttlMs` and `cacheScope` on a list. Callers of older revisions ignore members they do
// not know, so every caller gets them.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace sb::supervisor {

// `result` with `resultType: "complete"` unless it has a type of the revision's already
// ("complete" or "input_required"): anything else a computer wrote is replaced.
nlohmann::json complete(nlohmann::json result);

// A list result: `resultType` "complete", whatever the computer said (a list is never
// interim); `ttlMs` 0 (not to be cached) unless the computer gave a count of milliseconds;
// and `cacheScope` "private" when the list was narrowed for one caller, whatever the
// computer said (a shared cache must not serve it to another), or when it said nothing, or
// anything but "public" or "private".
void shape_list(nlohmann::json& result, bool narrowed);

// A computer's reply to `method` (a JSON object without its id) as a 2026-07-28 caller must
// get it, whichever revision the computer answered in (docs/protocol.md, "Revisions"):
// `resultType` kept when it is one the method may have ("complete"; "input_required" on
// tools/call, resources/read and prompts/get; "task" on tools/call), else "complete"; and a
// resources/read result's `ttlMs` and `cacheScope` as a list's are, never narrowed. The
// bytes are left as they are when nothing needs changing, and so is an error.
void shape_reply_for_2026(std::string& reply_without_id, std::string_view method);

}  // namespace sb::supervisor
