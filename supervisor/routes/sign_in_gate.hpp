// Who a request comes from, decided before any path is resolved (docs/auth.md): a static
// token, or with `[oauth]` an access token (a bearer token, or one bound to a key and
// presented with its DPoP proof) for this switchboard or the computer URL asked. A request
// whose token names nobody gets one refusal whatever the reason, counted and audited,
// with where a caller learns how to sign in.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "supervisor/callers/client_table.hpp"
#include "supervisor/http/types.hpp"
#include "supervisor/oauth/sign_in.hpp"
#include "supervisor/routes/state.hpp"

namespace sb::supervisor {

class SignInGate {
 public:
  SignInGate(SupervisorState& state, const HttpRequest& request)
      : state_(state), request_(request) {}

  // The caller the request's token names, or null.
  const Caller* authenticate();
  // The answer for a request authenticate() found no caller for: 401, or 403 for a token
  // without the scopes every request needs (RFC 6750 §3.1).
  HttpResponse refused() const;
  // The access token's identity, when OAuth signed the caller in.
  const std::optional<oauth::TokenIdentity>& identity() const { return identity_; }

 private:
  const Caller* signed_in(const std::string& token, bool with_proof);
  bool for_this_url(const std::vector<std::string>& resource_paths) const;
  std::string challenge(std::string_view error) const;

  SupervisorState& state_;
  const HttpRequest& request_;
  // What authenticate() saw, for the refusal's challenge.
  bool token_presented_ = false;
  bool missing_scope_ = false;
  std::optional<oauth::TokenIdentity> identity_;
};

// `route` run at once, or, for a request whose opaque OAuth token its issuer is to be
// asked about first (docs/auth.md, "Opaque tokens"), once the issuer has answered; a
// caller gone meanwhile ends whatever the request has become by then.
Underway after_introspection(SupervisorState& state, const HttpRequest& request,
                             std::function<Underway()> route);

}  // namespace sb::supervisor
