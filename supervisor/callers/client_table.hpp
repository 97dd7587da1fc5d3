// Who is calling: bearer tokens checked against every client's verifier in constant
// time, or the identity an OAuth access token names, and what each caller may reach.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "supervisor/config/config.hpp"

namespace sb::supervisor {

// A caller as the northbound side sees it: an HTTP client or a pod.
struct Caller {
  std::string name;
  config::Grant grant;
  std::string default_computer;
  int caller_cap = 0;  // 0: half the computer socket's cap
  bool wildcard() const { return grant.wildcard; }
};

Caller caller_from(const config::Client& client);
Caller caller_from(const config::Pod& attach);

class ClientTable {
 public:
  explicit ClientTable(const std::vector<config::Client>& clients);
  // The caller whose static token this is, or null. Every entry is compared, with no early
  // exit.
  const Caller* authenticate(const std::optional<std::string>& bearer_token) const;
  // The caller an OAuth access token of `issuer` names by one of `identities` (docs/auth.md):
  // the first such client in the config's order, or null.
  const Caller* identified(std::string_view issuer,
                           const std::vector<std::string>& identities) const;

 private:
  std::vector<Caller> callers_;
  std::vector<Verifier> verifiers_;    // of the callers with a static token...
  std::vector<std::size_t> verified_;  // ...and which caller each is
  std::map<std::pair<std::string, std::string>, std::size_t, std::less<>> identities_;
};

}  // namespace sb::supervisor
