// The members the 2026-07-28 revision requires of a result, on every result the switchboard
// writes or rewrites itself (docs/protocol.md, "Revisions"): `resultType` on each, and
// `ttlMs` and `cacheScope` on a list. Callers of older revisions ignore members they do
// not know, so every caller gets them.
#pragma once

#include <nlohmann/json.hpp>

namespace sb::supervisor {

// `result` with `resultType: "complete"` unless it has a type already.
nlohmann::json complete(nlohmann::json result);

// A list result: as complete(); `ttlMs` 0 (not to be cached) unless the computer gave one;
// and `cacheScope` "private" when the list was narrowed for one caller, whatever the
// computer said (a shared cache must not serve it to another), or when it said nothing.
void shape_list(nlohmann::json& result, bool narrowed);

}  // namespace sb::supervisor
