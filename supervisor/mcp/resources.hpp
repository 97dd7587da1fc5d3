// A computer's resources under the caller's grant (docs/protocol.md, "Resources, prompts
// and completions"): the lists narrowed to what the caller may read, templates only for a
// caller granted every resource, and resources/read forwarded only for a granted URI,
// audited like a tool call. A URI outside the grant is answered as an unknown one.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "supervisor/mcp/exchange.hpp"

namespace sb::supervisor {

Underway resources_list(const Exchange& exchange);
Underway resource_templates_list(const Exchange& exchange);
Underway resources_read(const Exchange& exchange);

// The answer to a resource that is not there, or not the caller's to read: the same
// bytes either way (-32602, as the 2026-07-28 revision has it).
nlohmann::json unknown_resource(const nlohmann::json& id, const std::string& uri);

}  // namespace sb::supervisor
