#include "supervisor/routes/computer_door.hpp"

#include "shared/verifier.hpp"
#include "supervisor/audit/audit_log.hpp"
#include "supervisor/metrics/metrics.hpp"
#include "supervisor/workers/registry.hpp"

namespace sb::supervisor {

bool admits_computer(SupervisorState& state, const std::optional<std::string>& token,
                     const std::string& peer) {
  const McpServices& services = state.services;
  if (token && services.workers.knows_secret(verifier_of(*token))) return true;
  services.audit.auth_failure("vm_auth_fail", peer);
  services.metrics.auth_failure("computer");
  return false;
}

HandOver enter_computer(SupervisorState& state, const std::string& token, base::UniqueFd& socket,
                        std::string upgrade_bytes, const std::string& peer) {
  const McpServices& services = state.services;
  const HandOver handed =
      services.workers.hand_over(verifier_of(token), socket, std::move(upgrade_bytes), peer);
  if (handed == HandOver::kRevoked)
    services.audit.write("vm_revoked", {{"peer", peer}, {"at", "attach"}});
  return handed;
}

}  // namespace sb::supervisor
