#include "supervisor/oauth/introspection.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "shared/text.hpp"

namespace sb::supervisor::oauth {
namespace {

using json = nlohmann::json;

std::string form_encoded(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char c : text) {
    const bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                            (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
    if (unreserved) {
      out += c;
    } else {
      const auto byte = static_cast<unsigned char>(c);
      out += '%';
      out += kHex[byte >> 4];
      out += kHex[byte & 15];
    }
  }
  return out;
}

}  // namespace

bool looks_like_jwt(std::string_view token) {
  return std::count(token.begin(), token.end(), '.') == 2;
}

std::string introspection_body(std::string_view token) {
  return "token=" + form_encoded(token) + "&token_type_hint=access_token";
}

std::string basic_authorization(std::string_view credentials) {
  return "Basic " + encode_base64(credentials);
}

std::variant<TokenIdentity, TokenRefusal> read_introspection(std::string_view body,
                                                             const TokenRules& rules,
                                                             std::int64_t now) {
  const json answer = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!answer.is_object()) return TokenRefusal{"an introspection answer that is not JSON"};
  if (answer.value("active", json()) != true) return TokenRefusal{"not active"};
  if (answer.contains("iss") && answer["iss"] != rules.issuer)
    return TokenRefusal{"another issuer"};
  // An answer without `aud` is for whoever asked (RFC 7662 §2.2 makes it optional).
  auto paths =
      answer.contains("aud") ? audience_paths(answer, rules.resource) : std::vector<std::string>{};
  if (!paths) return TokenRefusal{"minted for another audience"};
  const std::int64_t skew = rules.clock_skew.count();
  const auto expires = seconds_claim(answer, "exp");
  if (expires && *expires + skew <= now) return TokenRefusal{"expired"};
  if (const auto not_before = seconds_claim(answer, "nbf"); not_before && *not_before - skew > now)
    return TokenRefusal{"not valid yet"};
  auto verdict = identity_of(answer, rules, expires.value_or(0));
  if (auto* identity = std::get_if<TokenIdentity>(&verdict))
    identity->resource_paths = std::move(*paths);
  return verdict;
}

}  // namespace sb::supervisor::oauth
