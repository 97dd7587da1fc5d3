// Who is calling: bearer tokens checked against every client's verifier in constant
// time, and what each caller may reach.
#pragma once

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
  // The caller whose token this is, or null. Every entry is compared, with no early exit.
  const Caller* authenticate(const std::optional<std::string>& bearer_token) const;

 private:
  std::vector<Verifier> verifiers_;
  std::vector<Caller> callers_;
};

}  // namespace sb::supervisor
