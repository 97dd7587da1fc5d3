#include "supervisor/routes/computer_door.hpp"

#include "shared/verifier.hpp"
#include "supervisor/audit/audit_log.hpp"
#include "supervisor/metrics/metrics.hpp"
#include "supervisor/workers/registry.hpp"

namespace sb::supervisor {

AttachVerdict enter_computer(SupervisorState& state, const std::optional<std::string>& token,
                             base::UniqueFd& socket, std::string upgrade_bytes,
                             const std::string& peer) {
  const McpServices& services = state.services;
  const Verifier presented = verifier_of(token.value_or(""));
  if (!token || !services.workers.knows_secret(presented)) {
    services.audit.auth_failure("vm_auth_fail", peer);
    services.metrics.auth_failure("computer");
    return AttachVerdict::kUnknownSecret;
  }
  switch (services.workers.hand_over(presented, socket, std::move(upgrade_bytes), peer)) {
    case HandOver::kDone:
      return AttachVerdict::kHandedOver;
    case HandOver::kWorkerUnavailable:
      return AttachVerdict::kWorkerUnavailable;
    case HandOver::kRevoked:
      break;
  }
  services.audit.write("vm_revoked", {{"peer", peer}, {"at", "attach"}});
  return AttachVerdict::kRevoked;
}

}  // namespace sb::supervisor
