// [[client]] blocks: each a name, a token of its own or an OAuth identity (or both), and a
// grant in the v1 or v2 form.
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

// How the client signs in: a static token, an OAuth identity, or both; never neither.
void add_sign_in(const RawClient& block, const Config& config, Client& client,
                 std::string_view owner) {
  if (block.token)
    client.token = checked_verifier(*block.token, std::string(owner) + ": `token_sha256`");
  if (block.oauth_issuer && !block.oauth_identity)
    fail(owner, "`oauth_issuer` without `oauth_identity`: name who the token must be");
  if (!block.oauth_identity) {
    if (!client.token) {
      fail(owner,
           "no way to sign in: give it `token_sha256` (make a token with `switchboard "
           "gen-secret`) or `oauth_identity` (docs/auth.md)");
    }
    return;
  }
  if (!config.oauth) {
    fail(owner,
         "`oauth_identity` needs an [oauth] section naming the issuer whose tokens are "
         "taken (docs/auth.md)");
  }
  if (block.oauth_identity->empty()) fail(owner, "`oauth_identity` is empty");
  const auto& issuers = config.oauth->issuers;
  if (!block.oauth_issuer && issuers.size() > 1) {
    fail(owner, "`oauth_issuer` is needed: [oauth] names " + std::to_string(issuers.size()) +
                    " issuers, so say which one's tokens name this client");
  }
  const std::string issuer = block.oauth_issuer.value_or(issuers.front().issuer);
  if (std::none_of(issuers.begin(), issuers.end(),
                   [&](const OAuthIssuer& known) { return known.issuer == issuer; })) {
    fail(owner, "`oauth_issuer` " + in_quotes(issuer) + " is not an [[oauth.issuer]]");
  }
  for (const Client& earlier : config.clients) {
    if (earlier.oauth_issuer == issuer && earlier.oauth_identity == *block.oauth_identity) {
      fail(owner, "the same OAuth identity is [[client]] " + in_quotes(earlier.name) +
                      "'s: one identity, one client");
    }
  }
  client.oauth_issuer = issuer;
  client.oauth_identity = *block.oauth_identity;
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
    Client client{.name = block.name};
    add_sign_in(block, config, client, owner);
    if (client.token) check_token_unique(*client.token, config, owner);
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
