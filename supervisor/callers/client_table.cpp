#include "supervisor/callers/client_table.hpp"

namespace sb::supervisor {

Caller caller_from(const config::Client& client) {
  return Caller{client.name, client.grant, client.default_computer,
                client.max_inflight.value_or(0)};
}

Caller caller_from(const config::Pod& attach) {
  config::Grant grant;
  grant.named.emplace(attach.computer, attach.tools);
  return Caller{attach.name, std::move(grant), attach.computer, attach.max_inflight.value_or(0)};
}

ClientTable::ClientTable(const std::vector<config::Client>& clients) {
  for (const auto& client : clients) {
    const std::size_t index = callers_.size();
    callers_.push_back(caller_from(client));
    if (client.token) {
      verifiers_.push_back(*client.token);
      verified_.push_back(index);
    }
    if (!client.oauth_identity.empty())
      identities_.emplace(std::pair{client.oauth_issuer, client.oauth_identity}, index);
  }
}

const Caller* ClientTable::authenticate(const std::optional<std::string>& bearer_token) const {
  if (!bearer_token) return nullptr;
  const auto index = find_verifier(verifiers_, verifier_of(*bearer_token));
  return index ? &callers_[verified_[*index]] : nullptr;
}

const Caller* ClientTable::identified(std::string_view issuer,
                                      const std::vector<std::string>& identities) const {
  std::optional<std::size_t> first;
  for (const auto& identity : identities) {
    const auto found = identities_.find(std::pair{std::string(issuer), identity});
    if (found != identities_.end() && (!first || found->second < *first)) first = found->second;
  }
  return first ? &callers_[*first] : nullptr;
}

}  // namespace sb::supervisor
