// A computer's prompts under the caller's grant (docs/protocol.md, "Resources, prompts and
// completions"): prompts/list narrowed to the granted names, and prompts/get forwarded
// only for one of them, audited like a tool call. A prompt outside the grant is answered
// as an unknown one.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "supervisor/mcp/exchange.hpp"

namespace sb::supervisor {

Underway prompts_list(const Exchange& exchange);
Underway prompts_get(const Exchange& exchange);

// The answer to a prompt that is not there, or not the caller's to get: the same bytes
// either way.
nlohmann::json unknown_prompt(const nlohmann::json& id, const std::string& name);

}  // namespace sb::supervisor
