// [[client]] blocks: each a name, a token of its own and a grant in the v1 or v2 form.
#include <algorithm>
#include <utility>

#include "supervisor/config/messages.hpp"
#include "supervisor/config/rules.hpp"

namespace sb::config {
namespace {

// `tools` (v1) or `computers` (v2): exactly one of them, and `tools` only beside [vm].
Grant build_client_grant(const RawClient& block, const Config& config, std::string_view owner) {
  if (block.tools && block.computers) {
    fail(owner,
         "`tools` and `computers` are both set: `tools` is the v1 form (one computer); "
         "keep `computers` only");
  }
  if (block.tools) {
    if (block.resources || block.prompts) {
      fail(owner,
           "`resources` and `prompts` need the v2 form: write the grant as computers = { "
           "<name> = [...] } rather than `tools`");
    }
    if (!config.v1_form) {
      std::vector<std::string> tools;
      for (const auto& tool : *block.tools) tools.push_back(in_quotes(tool));
      fail(owner,
           "`tools` is the v1 form and names no computer, but this file has [[computer]] "
           "blocks; write computers = { <name> = [...] } instead, e.g. computers = { " +
               config.computers.front().name + " = [" + join(tools, ", ") + "] }");
    }
    Grant grant;
    grant.named.emplace(std::string(kV1ComputerName), build_tool_list(*block.tools, owner));
    return grant;
  }
  if (!block.computers) {
    fail(owner, "no `computers`: name at least one computer and its tools, e.g. computers = { " +
                    config.computers.front().name +
                    " = [\"sys_info\"] }, or use computers = { \"*\" = [\"*\"] } for every "
                    "computer and tool");
  }
  return build_computer_grant(*block.computers, owner);
}

void check_token_unique(const Verifier& token, const Config& config, std::string_view owner) {
  for (const Computer& computer : config.computers) {
    if (computer.secret != token) continue;
    fail(owner, "`token_sha256` is the verifier of [[computer]] " + in_quotes(computer.name) +
                    "'s secret; a client token and a computer secret must differ: make a new "
                    "token with `switchboard gen-secret`");
  }
  for (const Client& earlier : config.clients) {
    if (earlier.token != token) continue;
    fail(owner, "`token_sha256` is shared with another client ([[client]] " +
                    in_quotes(earlier.name) +
                    "): each client needs its own token; make one with `switchboard gen-secret`");
  }
}

}  // namespace

void build_clients(const RawFile& raw, Config& config) {
  for (const RawClient& block : raw.clients) {
    const std::string owner = block_owner("[[client]]", block.name);
    check_principal_name(block.name, owner);
    const bool taken = std::any_of(config.clients.begin(), config.clients.end(),
                                   [&](const Client& c) { return c.name == block.name; });
    if (taken) {
      fail(owner, "duplicate name: another [[client]] is already called " + in_quotes(block.name) +
                      "; give each client its own name");
    }
    Client client{
        block.name, checked_verifier(block.token, owner + ": `token_sha256`"), {}, {}, {}};
    check_token_unique(client.token, config, owner);
    client.grant = build_client_grant(block, config, owner);
    check_granted_computers_exist(client.grant, config, owner);
    add_resources_and_prompts(block, config, client.grant, owner);
    client.default_computer =
        resolve_default_computer(block.default_computer, client.grant, config, owner);
    if (block.max_inflight) {
      client.max_inflight =
          checked_max_inflight(*block.max_inflight, owner, "this caller's share of one computer");
    }
    config.clients.push_back(std::move(client));
  }
}

}  // namespace sb::config
