// An OAuth 2.1 access token in the JWT profile of RFC 9068, checked as a resource server
// checks one (docs/auth.md, "What is checked"): its header (`typ` "at+jwt", an accepted
// algorithm, a known key), its signature, then its claims (`iss`, `aud`, `exp`, `nbf`),
// and who it names. Nothing of a token is ever logged: a refusal says why in words of the
// switchboard's own.
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "supervisor/oauth/keys.hpp"

namespace sb::supervisor::oauth {

// A token longer than this is refused unread.
inline constexpr std::size_t kMaxTokenBytes = 8 * 1024;

struct TokenRules {
  std::string issuer;                  // `iss`, exactly
  std::vector<std::string> audiences;  // `aud` must name one of them (RFC 8707)
  std::vector<Algorithm> algorithms;
  std::chrono::seconds clock_skew{60};
  std::string identity_claim = "sub";  // a string claim that names the caller
};

// Who a valid token names, and what it carries that later checks need.
struct TokenIdentity {
  std::string issuer;
  std::string identity;             // the identity claim's value
  std::string subject;              // `sub`, for the audit ("" when absent)
  std::vector<std::string> scopes;  // `scope`, split on spaces
  std::string confirmation_key;     // `cnf.jkt` (RFC 9449 §6.1), "" when unbound
  std::int64_t expires_at = 0;      // `exp`, seconds since the epoch
};

struct TokenRefusal {
  std::string why;
  // The key it names is not in the set: the set may be out of date.
  bool unknown_key = false;
};

// A compact JWS (RFC 7515 §7.1) in its three parts, as a token or a proof came; none when
// it is longer than `max_bytes` or not three dot-separated parts.
struct CompactJws {
  std::string_view header;
  std::string_view payload;
  std::string_view signature;
  std::string_view signing_input;  // header.payload
};
std::optional<CompactJws> split_compact_jws(std::string_view text, std::size_t max_bytes);
// The JSON object base64url `encoded` holds; null when it holds none.
nlohmann::json decoded_object(std::string_view encoded);

// What an access token's claims and an introspection answer share (RFC 9068, RFC 7662): a
// time in seconds since the epoch (none when absent or not a number), whether `aud` (a
// string or an array) names one of `audiences`, and `scope` split on spaces.
std::optional<std::int64_t> seconds_claim(const nlohmann::json& claims, const char* name);
bool names_audience(const nlohmann::json& claims, const std::vector<std::string>& audiences);
std::vector<std::string> scopes_of(const nlohmann::json& claims);

// The `iss` a token claims, unverified: which issuer's rules and keys to check it with.
std::optional<std::string> claimed_issuer(std::string_view token);

// `token` checked against `rules` and `keys` at `now` (seconds since the epoch).
std::variant<TokenIdentity, TokenRefusal> check_access_token(std::string_view token,
                                                             const std::vector<PublicKey>& keys,
                                                             const TokenRules& rules,
                                                             std::int64_t now);

}  // namespace sb::supervisor::oauth
