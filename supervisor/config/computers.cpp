// [[computer]] blocks (or the v1 [vm] one), and what is derived per computer from who can
// reach it.
#include <algorithm>
#include <utility>

#include "supervisor/config/messages.hpp"
#include "supervisor/config/rules.hpp"

namespace sb::config {

void build_computers(const RawFile& raw, Config& config) {
  if (raw.vm_secret && !raw.computers.empty()) {
    fail("",
         "[vm] and [[computer]] may not both be in one file: [vm] is the v1 form of a single "
         "computer named \"default\"; write every "
         "computer as a [[computer]] block (for the old one: name = \"default\" and its "
         "secret_sha256) and remove [vm]");
  }
  if (raw.vm_secret) {
    config.v1_form = true;
    config.computers.push_back({std::string(kV1ComputerName),
                                checked_verifier(*raw.vm_secret, "[vm].secret_sha256"),
                                config.max_inflight});
  }
  for (const RawComputer& block : raw.computers) {
    const std::string owner = block_owner("[[computer]]", block.name);
    check_computer_name(block.name, owner);
    if (config.find_computer(block.name)) {
      fail(owner, "duplicate name: another [[computer]] is already called " +
                      in_quotes(block.name) + "; give each computer its own name");
    }
    Computer computer{block.name, checked_verifier(block.secret, owner + ": `secret_sha256`"),
                      config.max_inflight};
    for (const Computer& earlier : config.computers) {
      if (earlier.secret != computer.secret) continue;
      fail(owner, "`secret_sha256` is already another computer's ([[computer]] " +
                      in_quotes(earlier.name) +
                      "): the secret alone selects the slot, so one verifier is one computer; "
                      "make this computer its own pair with `switchboard gen-secret`");
    }
    if (block.max_inflight) {
      computer.max_inflight =
          checked_max_inflight(*block.max_inflight, owner, "this computer's in-flight cap");
    }
    config.computers.push_back(std::move(computer));
  }
  if (config.computers.empty()) {
    fail("",
         "nothing to relay to: the file configures no computer; add a [[computer]] block "
         "with name and secret_sha256 (or, in the v1 form, a [vm] block)");
  }
}

std::vector<std::string> computer_names(const Config& config) {
  std::vector<std::string> names;
  for (const Computer& computer : config.computers) names.push_back(in_quotes(computer.name));
  return names;
}

// Notifications that name no call may go to a caller only when exactly one client (a
// [[client]] or a [[pty_attach]]) can reach the computer at all.
void mark_sole_callers(Config& config) {
  for (Computer& computer : config.computers) {
    const auto clients = std::count_if(
        config.clients.begin(), config.clients.end(),
        [&](const Client& client) { return client.grant.tools_for(computer.name) != nullptr; });
    const auto attaches =
        std::count_if(config.pods.begin(), config.pods.end(),
                      [&](const Pod& attach) { return attach.computer == computer.name; });
    computer.sole_caller = clients + attaches == 1;
  }
}

}  // namespace sb::config
