// [oauth]: the switchboard as an OAuth 2.1 resource server (docs/auth.md, "Configuration"):
// its public URL, the scopes every token needs, and the issuers whose tokens it takes.
#include <algorithm>
#include <utility>

#include "shared/text.hpp"
#include "supervisor/config/messages.hpp"
#include "supervisor/config/rules.hpp"

namespace sb::config {
namespace {

constexpr std::int64_t kMaxClockSkewSecs = 600;
constexpr std::string_view kAlgorithms[] = {"RS256", "PS256", "ES256", "EdDSA"};

OAuthIssuer build_issuer(const RawIssuer& raw, std::string_view owner, std::string_view home) {
  OAuthIssuer issuer{.issuer = checked_outbound_url(raw.issuer, owner, "`issuer`")};
  if (raw.jwks_url) issuer.jwks_url = checked_outbound_url(*raw.jwks_url, owner, "`jwks_url`");
  if (raw.algorithms) {
    if (raw.algorithms->empty()) fail(owner, "`algorithms` is empty: name at least one");
    for (const auto& name : *raw.algorithms) {
      if (std::find(std::begin(kAlgorithms), std::end(kAlgorithms), name) ==
          std::end(kAlgorithms)) {
        fail(owner, "`algorithms` names " + in_quotes(name) +
                        ": the accepted ones are RS256, PS256, ES256 and EdDSA (never none "
                        "or HMAC)");
      }
      issuer.algorithms.push_back(name);
    }
  } else {
    issuer.algorithms.assign(std::begin(kAlgorithms), std::end(kAlgorithms));
  }
  if (raw.clock_skew_secs) {
    if (*raw.clock_skew_secs < 0 || *raw.clock_skew_secs > kMaxClockSkewSecs)
      fail(owner, "`clock_skew_secs` must be between 0 and 600");
    issuer.clock_skew_secs = static_cast<int>(*raw.clock_skew_secs);
  }
  if (raw.identity_claim) {
    const std::string& claim = *raw.identity_claim;
    const bool plain =
        !claim.empty() && claim.size() <= 64 && std::all_of(claim.begin(), claim.end(), [](char c) {
          return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '_' || c == '-' || c == '.';
        });
    if (!plain) fail(owner, "`identity_claim` must be a claim's name, e.g. \"sub\" or \"email\"");
    issuer.identity_claim = claim;
  }
  if (raw.introspection_url.has_value() != raw.introspection_credentials_file.has_value()) {
    fail(owner,
         "`introspection_url` and `introspection_credentials_file` go together: the endpoint, "
         "and a file holding the switchboard's client_id:client_secret there");
  }
  if (raw.introspection_url) {
    issuer.introspection_url =
        checked_outbound_url(*raw.introspection_url, owner, "`introspection_url`");
    issuer.introspection_credentials_file = expand_home(*raw.introspection_credentials_file, home);
  }
  return issuer;
}

}  // namespace

void build_oauth(const RawFile& raw, Config& config, std::string_view home) {
  if (!raw.oauth) return;
  const RawOAuth& block = *raw.oauth;
  OAuth oauth{.resource = checked_outbound_url(block.resource, "[oauth]", "`resource`")};
  if (block.scopes) {
    for (const auto& scope : *block.scopes) {
      if (scope.empty() || scope.find_first_of(" \t\"\\") != std::string::npos)
        fail("[oauth]", "`scopes` holds " + in_quotes(scope) + ", which is not a scope token");
      oauth.scopes.push_back(scope);
    }
  }
  if (block.issuers.empty()) {
    fail("[oauth]",
         "no [[oauth.issuer]]: name the authorization server whose tokens are taken, e.g. "
         "[[oauth.issuer]] issuer = \"https://idp.example.com\"");
  }
  for (std::size_t i = 0; i < block.issuers.size(); ++i) {
    const std::string owner = "[[oauth.issuer]] " + in_quotes(block.issuers[i].issuer);
    OAuthIssuer issuer = build_issuer(block.issuers[i], owner, home);
    for (const auto& earlier : oauth.issuers) {
      if (earlier.issuer == issuer.issuer) fail(owner, "the same issuer is configured twice");
    }
    oauth.issuers.push_back(std::move(issuer));
  }
  config.oauth = std::move(oauth);
}

}  // namespace sb::config
