// The computer status object of /status and vm_status (docs/protocol.md, "Status and
// readiness"). peer and in_flight are internals, shown only to "*" callers.
#pragma once

#include <nlohmann/json.hpp>

#include "supervisor/workers/registry.hpp"

namespace sb::supervisor {

nlohmann::json computer_status_json(const ComputerView& view, bool show_internals);

}  // namespace sb::supervisor
