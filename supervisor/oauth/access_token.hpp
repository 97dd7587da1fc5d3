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
  std::string issuer;  // `iss`, exactly
  // `aud` must name it or a computer's URL under it (RFC 8707); no trailing slash.
  std::string resource;
  std::vector<Algorithm> algorithms;
  std::chrono::seconds clock_skew{60};
  // The claim that names the caller: a string, or an array of strings (e.g. `groups`) of
  // which each names a caller the token may be.
  std::string identity_claim = "sub";
};

// An identity claim that is an array holds at most this many names.
inline constexpr std::size_t kMaxIdentities = 256;

// Who a valid token names, and what it carries that later checks need.
struct TokenIdentity {
  std::string issuer;
  std::vector<std::string> identities;  // the identity claim's value, or its entries
  std::string subject;                  // `sub`, for the audit ("" when absent)
  std::vector<std::string> scopes;      // `scope`, split on spaces
  std::string confirmation_key;         // `cnf.jkt` (RFC 9449 §6.1), "" when unbound
  // The computers' URLs the token is for, as paths (/mcp/alpha), when its audience is those
  // rather than the switchboard's (RFC 9728 §3.3); empty: the whole switchboard.
  std::vector<std::string> resource_paths;
  std::int64_t expires_at = 0;  // `exp`, seconds since the epoch
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
// time in seconds since the epoch (none when absent or not a number), what `aud` grants,
// and `scope` split on spaces.
std::optional<std::int64_t> seconds_claim(const nlohmann::json& claims, const char* name);
// What `aud` (a string or an array) names of `resource` (without a trailing slash): the
// whole resource (an empty list) when it names it, else the computers' URLs under it it
// names, as paths (resource + "/mcp/alpha" → "/mcp/alpha"; at most 16); none when it
// names neither.
std::optional<std::vector<std::string>> audience_paths(const nlohmann::json& claims,
                                                       std::string_view resource);
std::vector<std::string> scopes_of(const nlohmann::json& claims);

// Whether `path` is a computer's URL's path as audiences and the path-suffixed metadata
// name it: "/mcp" or "/mcp/<name>", a name of at most 128 visible ASCII characters and no
// slash, quote, backslash, `?` or `#`.
bool is_resource_path(std::string_view path);
// Who `claims` (checked already) name under `rules`, expiring at `expires_at`; refused when
// the identity claim names nobody.
std::variant<TokenIdentity, TokenRefusal> identity_of(const nlohmann::json& claims,
                                                      const TokenRules& rules,
                                                      std::int64_t expires_at);

// The `iss` a token claims, unverified: which issuer's rules and keys to check it with.
std::optional<std::string> claimed_issuer(std::string_view token);

// `token` checked against `rules` and `keys` at `now` (seconds since the epoch).
std::variant<TokenIdentity, TokenRefusal> check_access_token(std::string_view token,
                                                             const std::vector<PublicKey>& keys,
                                                             const TokenRules& rules,
                                                             std::int64_t now);

}  // namespace sb::supervisor::oauth
