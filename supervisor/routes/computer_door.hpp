// What lets a computer's attach in (docs/protocol.md, "Attach"): its secret checked
// against every computer's verifier, a failure audited and counted, then the socket handed
// to the worker of the computer the secret names as of now.
#pragma once

#include <optional>
#include <string>

#include "base/unique_fd.hpp"
#include "supervisor/http/attach_hand_over.hpp"
#include "supervisor/routes/state.hpp"

namespace sb::supervisor {

// Whether `token` is some computer's secret (every verifier compared); a refusal is
// audited and counted.
bool admits_computer(SupervisorState& state, const std::optional<std::string>& token,
                     const std::string& peer);
// Hands `socket` to the worker of the computer whose secret `token` is, as of now.
HandOver enter_computer(SupervisorState& state, const std::string& token, base::UniqueFd& socket,
                        std::string upgrade_bytes, const std::string& peer);

}  // namespace sb::supervisor
