#include "supervisor/oauth/access_token.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "shared/text.hpp"

namespace sb::supervisor::oauth {
namespace {

using json = nlohmann::json;

TokenRefusal refused(std::string why, bool unknown_key = false) {
  return TokenRefusal{std::move(why), unknown_key};
}

// RFC 9068 §2.1: "at+jwt", with or without the "application/" prefix, in any case.
bool access_token_type(const json& header) {
  const auto type = header.find("typ");
  if (type == header.end() || !type->is_string()) return false;
  const std::string lowered = ascii_lowercase(type->get_ref<const std::string&>());
  return lowered == "at+jwt" || lowered == "application/at+jwt";
}

// The key that signed: the one of `kid`, or the only key that fits when the token names none.
const PublicKey* signing_key(const std::vector<PublicKey>& keys, const json& header) {
  const json kid = header.value("kid", json());
  if (kid.is_string()) {
    const auto found = std::find_if(keys.begin(), keys.end(), [&](const PublicKey& key) {
      return key.kid == kid.get_ref<const std::string&>();
    });
    return found == keys.end() ? nullptr : &*found;
  }
  return keys.size() == 1 ? &keys.front() : nullptr;
}

}  // namespace

std::optional<CompactJws> split_compact_jws(std::string_view text, std::size_t max_bytes) {
  if (text.size() > max_bytes) return std::nullopt;
  const auto first = text.find('.');
  if (first == std::string_view::npos) return std::nullopt;
  const auto second = text.find('.', first + 1);
  if (second == std::string_view::npos || text.find('.', second + 1) != std::string_view::npos)
    return std::nullopt;
  return CompactJws{text.substr(0, first), text.substr(first + 1, second - first - 1),
                    text.substr(second + 1), text.substr(0, second)};
}

json decoded_object(std::string_view encoded) {
  const auto text = decode_base64url(encoded);
  if (!text) return nullptr;
  json value = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  return value.is_object() ? value : json(nullptr);
}

std::optional<std::int64_t> seconds_claim(const json& claims, const char* name) {
  const auto found = claims.find(name);
  if (found == claims.end() || !found->is_number()) return std::nullopt;
  const double value = found->get<double>();
  if (!(value > -1e15 && value < 1e15)) return std::nullopt;
  return static_cast<std::int64_t>(value);
}

bool is_resource_path(std::string_view path) {
  if (path == "/mcp") return true;
  if (!path.starts_with("/mcp/")) return false;
  const std::string_view name = path.substr(5);
  return !name.empty() && name.size() <= 128 && std::all_of(name.begin(), name.end(), [](char c) {
    return c > ' ' && c < 0x7f && c != '/' && c != '"' && c != '\\' && c != '?' && c != '#';
  });
}

std::optional<std::vector<std::string>> audience_paths(const json& claims,
                                                       std::string_view resource) {
  constexpr std::size_t kMaxPaths = 16;
  const auto audience = claims.find("aud");
  if (audience == claims.end()) return std::nullopt;
  const json named = audience->is_array() ? *audience : json::array({*audience});
  std::vector<std::string> paths;
  for (const json& value : named) {
    if (!value.is_string()) continue;
    std::string_view text = value.get_ref<const std::string&>();
    if (!text.starts_with(resource)) continue;
    text.remove_prefix(resource.size());
    if (text.ends_with('/')) text.remove_suffix(1);
    if (text.empty()) return std::vector<std::string>{};
    if (is_resource_path(text) && paths.size() < kMaxPaths) paths.emplace_back(text);
  }
  if (paths.empty()) return std::nullopt;
  return paths;
}

std::vector<std::string> scopes_of(const json& claims) {
  std::vector<std::string> scopes;
  const auto scope = claims.find("scope");
  if (scope == claims.end() || !scope->is_string()) return scopes;
  std::string_view rest = scope->get_ref<const std::string&>();
  while (!rest.empty()) {
    const auto space = rest.find(' ');
    const auto word = rest.substr(0, space);
    if (!word.empty()) scopes.emplace_back(word);
    if (space == std::string_view::npos) break;
    rest.remove_prefix(space + 1);
  }
  return scopes;
}

namespace {

// The names an identity claim holds: itself when a string, its string entries when an
// array; none when it holds none, or more than kMaxIdentities.
std::vector<std::string> names_in(const json& claim) {
  std::vector<std::string> names;
  if (claim.is_string() && !claim.get_ref<const std::string&>().empty())
    names.push_back(claim.get<std::string>());
  if (!claim.is_array() || claim.size() > kMaxIdentities) return names;
  for (const json& entry : claim) {
    if (entry.is_string() && !entry.get_ref<const std::string&>().empty())
      names.push_back(entry.get<std::string>());
  }
  return names;
}

}  // namespace

std::variant<TokenIdentity, TokenRefusal> identity_of(const json& claims, const TokenRules& rules,
                                                      std::int64_t expires_at) {
  auto names = names_in(claims.value(rules.identity_claim, json()));
  if (names.empty()) return TokenRefusal{"no " + rules.identity_claim + " claim naming the caller"};
  const json subject = claims.value("sub", json());
  TokenIdentity out{.issuer = rules.issuer,
                    .identities = std::move(names),
                    .subject = subject.is_string() ? subject.get<std::string>() : std::string(),
                    .scopes = scopes_of(claims),
                    .expires_at = expires_at};
  const json::json_pointer jkt("/cnf/jkt");
  if (claims.contains(jkt) && claims.at(jkt).is_string())
    out.confirmation_key = claims.at(jkt).get<std::string>();
  return out;
}

std::optional<std::string> claimed_issuer(std::string_view token) {
  const auto parts = split_compact_jws(token, kMaxTokenBytes);
  if (!parts) return std::nullopt;
  const json claims = decoded_object(parts->payload);
  const auto issuer = claims.is_object() ? claims.find("iss") : claims.end();
  if (issuer == claims.end() || !issuer->is_string()) return std::nullopt;
  return issuer->get<std::string>();
}

std::variant<TokenIdentity, TokenRefusal> check_access_token(std::string_view token,
                                                             const std::vector<PublicKey>& keys,
                                                             const TokenRules& rules,
                                                             std::int64_t now) {
  const auto parts = split_compact_jws(token, kMaxTokenBytes);
  if (!parts) return refused("not a signed JWT");
  const json header = decoded_object(parts->header);
  if (header.is_null()) return refused("a header that is not JSON");
  if (!access_token_type(header)) return refused("not an access token (typ is not at+jwt)");
  const json alg = header.value("alg", json());
  const auto algorithm =
      alg.is_string() ? algorithm_named(alg.get_ref<const std::string&>()) : std::nullopt;
  if (!algorithm || std::find(rules.algorithms.begin(), rules.algorithms.end(), *algorithm) ==
                        rules.algorithms.end())
    return refused("an algorithm not accepted");
  if (header.contains("crit")) return refused("a critical header not understood");
  const PublicKey* key = signing_key(keys, header);
  if (!key) return refused("signed by a key the issuer's set does not have", true);
  const auto signature = decode_base64url(parts->signature);
  if (!signature || !signature_holds(*key, *algorithm, parts->signing_input, *signature))
    return refused("a signature that does not hold");

  const json claims = decoded_object(parts->payload);
  if (claims.is_null()) return refused("claims that are not JSON");
  if (claims.value("iss", json()) != rules.issuer) return refused("another issuer");
  auto paths = audience_paths(claims, rules.resource);
  if (!paths) return refused("minted for another audience");
  const auto expires = seconds_claim(claims, "exp");
  const std::int64_t skew = rules.clock_skew.count();
  if (!expires) return refused("no expiry");
  if (*expires + skew <= now) return refused("expired");
  if (const auto not_before = seconds_claim(claims, "nbf"); not_before && *not_before - skew > now)
    return refused("not valid yet");
  if (claims.contains("nbf") && !seconds_claim(claims, "nbf")) return refused("a malformed nbf");
  auto verdict = identity_of(claims, rules, *expires);
  if (auto* identity = std::get_if<TokenIdentity>(&verdict))
    identity->resource_paths = std::move(*paths);
  return verdict;
}

}  // namespace sb::supervisor::oauth
