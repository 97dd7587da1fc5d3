// Opaque access tokens, checked by asking their issuer (RFC 7662; docs/auth.md, "Opaque
// tokens"): what the switchboard sends to an introspection endpoint, and what it makes of
// the answer: who the token names, or why not.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "supervisor/oauth/access_token.hpp"

namespace sb::supervisor::oauth {

// Whether `token` has the form of a JWT (three dot-separated parts); anything else is
// opaque.
bool looks_like_jwt(std::string_view token);

// The body of an introspection request for `token`, form-encoded.
std::string introspection_body(std::string_view token);

// The header that authenticates the switchboard at the endpoint: `credentials` is its
// `client_id:client_secret`, sent as HTTP Basic (RFC 7662 §2.1).
std::string basic_authorization(std::string_view credentials);

// An introspection answer checked against `rules` at `now`: `active` true, and where the
// answer says them, the issuer, an audience of this switchboard's, an expiry not past and
// a not-before not ahead; then the identity claim, as for a JWT.
std::variant<TokenIdentity, TokenRefusal> read_introspection(std::string_view body,
                                                             const TokenRules& rules,
                                                             std::int64_t now);

}  // namespace sb::supervisor::oauth
