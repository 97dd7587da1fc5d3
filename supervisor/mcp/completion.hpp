// completion/complete under the caller's grant (docs/protocol.md, "Resources, prompts and
// completions"): forwarded only for a prompt or a resource the caller may use; for any
// other, or a computer that offers no completions, no values, answered by the switchboard.
#pragma once

#include "supervisor/mcp/exchange.hpp"

namespace sb::supervisor {

Underway complete(const Exchange& exchange);

}  // namespace sb::supervisor
