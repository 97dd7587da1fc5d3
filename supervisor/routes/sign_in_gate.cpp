#include "supervisor/routes/sign_in_gate.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <variant>

#include "base/unix_time.hpp"
#include "shared/verifier.hpp"
#include "supervisor/audit/audit_log.hpp"
#include "supervisor/metrics/metrics.hpp"

namespace sb::supervisor {
namespace {

// An opaque OAuth token no issuer has vouched for yet, which its issuer is to be asked
// about before the request is routed.
std::optional<std::string> token_to_introspect(const SupervisorState& state,
                                               const HttpRequest& request) {
  if (!state.sign_in || !request.authorization) return std::nullopt;
  auto token = parse_bearer(*request.authorization);
  if (!token) token = parse_credentials(*request.authorization, "dpop");
  // The static table last: a request that needs no question is not authenticated twice.
  if (!token ||
      !state.sign_in->awaits_introspection(*token, unix_time_now<std::chrono::seconds>()) ||
      state.clients->authenticate(token))
    return std::nullopt;
  return token;
}

}  // namespace

// A token that names nobody is the same refusal whatever the reason.
const Caller* SignInGate::authenticate() {
  const auto token = request_.authorization ? parse_bearer(*request_.authorization) : std::nullopt;
  // A sender-constrained token (RFC 9449) comes under its own scheme, with its proof.
  const auto bound_token = !token && request_.authorization && state_.sign_in
                               ? parse_credentials(*request_.authorization, "dpop")
                               : std::nullopt;
  token_presented_ = token.has_value() || bound_token.has_value();
  const Caller* caller = state_.clients->authenticate(token);
  if (!caller && token && state_.sign_in) caller = signed_in(*token, /*with_proof=*/false);
  if (!caller && bound_token) caller = signed_in(*bound_token, /*with_proof=*/true);
  if (!caller) {
    state_.services.audit.auth_failure("client_auth_fail", request_.peer);
    state_.services.metrics.auth_failure("client");
  }
  return caller;
}

// The caller an OAuth access token names. A token bound to a key comes with a DPoP proof
// by that key, and only so; an unbound one only as a bearer token (RFC 9449 §7).
const Caller* SignInGate::signed_in(const std::string& token, bool with_proof) {
  const auto now = unix_time_now<std::chrono::seconds>();
  const auto verdict = state_.sign_in->check(token, now);
  const auto* identity = std::get_if<oauth::TokenIdentity>(&verdict);
  if (!identity || identity->confirmation_key.empty() == with_proof) return nullptr;
  if (!for_this_url(identity->resource_paths)) return nullptr;
  if (with_proof) {
    if (!request_.dpop) return nullptr;
    const auto proved = state_.sign_in->check_proof(*request_.dpop, request_.method,
                                                    request_path(request_.target), token, now);
    const auto* key = std::get_if<std::string>(&proved);
    if (!key || *key != identity->confirmation_key) return nullptr;
  }
  const Caller* caller = state_.clients->identified(identity->issuer, identity->identities);
  if (!caller) return nullptr;
  for (const auto& scope : state_.sign_in->oauth().scopes) {
    if (std::find(identity->scopes.begin(), identity->scopes.end(), scope) ==
        identity->scopes.end()) {
      missing_scope_ = true;
      return nullptr;
    }
  }
  identity_ = *identity;
  return caller;
}

// Whether a token for these computers' URLs (none: for the whole switchboard) is for the
// URL asked; by the path alone, so that it never tells whether a computer exists.
bool SignInGate::for_this_url(const std::vector<std::string>& resource_paths) const {
  if (resource_paths.empty()) return true;
  std::string_view path = request_path(request_.target);
  if (path.size() > 1 && path.ends_with('/')) path.remove_suffix(1);
  return std::find(resource_paths.begin(), resource_paths.end(), path) != resource_paths.end();
}

// With OAuth, the 401 names where a caller learns how to sign in (RFC 9728 §5.1).
HttpResponse SignInGate::refused() const {
  if (!state_.sign_in) return unauthorized_response();
  if (missing_scope_) {
    HttpResponse response = text_response(403, "insufficient scope");
    response.headers.emplace_back("WWW-Authenticate", challenge("insufficient_scope"));
    return response;
  }
  HttpResponse response = text_response(401, "unauthorized");
  response.headers.emplace_back("WWW-Authenticate",
                                challenge(token_presented_ ? "invalid_token" : ""));
  // Tokens bound to a key are taken too, with proofs signed by these (RFC 9449 §7.1).
  response.headers.emplace_back("WWW-Authenticate", R"(DPoP algs="RS256 PS256 ES256 EdDSA")");
  return response;
}

std::string SignInGate::challenge(std::string_view error) const {
  std::string value = R"(Bearer resource_metadata=")" + state_.sign_in->metadata_url() + '"';
  if (!error.empty()) value += R"(, error=")" + std::string(error) + '"';
  const auto& scopes = state_.sign_in->oauth().scopes;
  if (!scopes.empty()) {
    std::string joined;
    for (const auto& scope : scopes) joined += (joined.empty() ? "" : " ") + scope;
    value += R"(, scope=")" + joined + '"';
  }
  return value;
}

Underway after_introspection(SupervisorState& state, const HttpRequest& request,
                             std::function<Underway()> route) {
  auto token = token_to_introspect(state, request);
  if (!token) return route();
  auto routed = std::make_shared<Underway>();
  auto gone = std::make_shared<bool>(false);
  state.sign_in->introspect(std::move(*token), unix_time_now<std::chrono::seconds>(),
                            [route = std::move(route), routed, gone] {
                              if (!*gone) *routed = route();
                            });
  return Underway{.abandon = [routed, gone] {
    *gone = true;
    if (routed->abandon) routed->abandon();
  }};
}

}  // namespace sb::supervisor
