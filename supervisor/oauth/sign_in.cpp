#include "supervisor/oauth/sign_in.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "shared/verifier.hpp"

namespace sb::supervisor::oauth {
namespace {

using json = nlohmann::json;

std::vector<Algorithm> algorithms_of(const std::vector<std::string>& names) {
  std::vector<Algorithm> out;
  for (const auto& name : names) {
    if (const auto algorithm = algorithm_named(name)) out.push_back(*algorithm);
  }
  return out;
}

// The resource without a trailing slash, so that "https://sb.example/" and
// "https://sb.example" are the one audience they are.
std::string without_trailing_slash(std::string url) {
  while (url.size() > 1 && url.back() == '/') url.pop_back();
  return url;
}

}  // namespace

SignIn::SignIn(boost::asio::io_context& io, OutboundClient& client, config::OAuth oauth)
    : oauth_(std::move(oauth)) {
  const std::string resource = without_trailing_slash(oauth_.resource);
  for (const auto& issuer : oauth_.issuers) {
    TokenRules rules{.issuer = issuer.issuer,
                     .audiences = {resource, resource + "/"},
                     .algorithms = algorithms_of(issuer.algorithms),
                     .clock_skew = std::chrono::seconds(issuer.clock_skew_secs),
                     .identity_claim = issuer.identity_claim};
    issuers_.push_back(Issuer{std::move(rules), std::make_shared<IssuerKeys>(io, client, issuer)});
  }
}

SignIn::~SignIn() {
  for (auto& issuer : issuers_) issuer.keys->stop();
}

void SignIn::start() {
  for (auto& issuer : issuers_) issuer.keys->start();
}

std::variant<TokenIdentity, TokenRefusal> SignIn::check(std::string_view token, std::int64_t now) {
  if (token.size() > kMaxTokenBytes) return TokenRefusal{"not a signed JWT"};
  const Verifier digest = verifier_of(token);
  const std::string key(digest.digest.begin(), digest.digest.end());
  if (const auto found = remembered_.find(key); found != remembered_.end()) {
    if (found->second.valid_until > now) return found->second.identity;
    return TokenRefusal{"expired"};
  }
  auto verdict = check_unremembered(token, now);
  if (const auto* identity = std::get_if<TokenIdentity>(&verdict)) remember(key, *identity);
  return verdict;
}

void SignIn::remember(const std::string& digest, const TokenIdentity& identity) {
  const auto issuer = std::find_if(issuers_.begin(), issuers_.end(), [&](const Issuer& known) {
    return known.rules.issuer == identity.issuer;
  });
  if (issuer == issuers_.end()) return;
  const Remembered entry{identity, identity.expires_at + issuer->rules.clock_skew.count()};
  if (!remembered_.emplace(digest, entry).second) return;
  remembered_order_.push_back(digest);
  while (remembered_order_.size() > kRemembered) {
    remembered_.erase(remembered_order_.front());
    remembered_order_.pop_front();
  }
}

std::variant<TokenIdentity, TokenRefusal> SignIn::check_unremembered(std::string_view token,
                                                                     std::int64_t now) const {
  const auto claimed = claimed_issuer(token);
  if (!claimed) return TokenRefusal{"not a JWT naming its issuer"};
  for (const auto& issuer : issuers_) {
    if (issuer.rules.issuer != *claimed) continue;
    auto verdict = check_access_token(token, issuer.keys->keys(), issuer.rules, now);
    if (const auto* refusal = std::get_if<TokenRefusal>(&verdict); refusal && refusal->unknown_key)
      issuer.keys->key_unknown();
    return verdict;
  }
  return TokenRefusal{"an issuer not configured"};
}

std::variant<std::string, TokenRefusal> SignIn::check_proof(std::string_view proof,
                                                            std::string_view method,
                                                            std::string_view path,
                                                            std::string_view access_token,
                                                            std::int64_t now) {
  const std::string& resource = oauth_.resource;
  const std::size_t host_end = resource.find('/', resource.find("://") + 3);
  const std::string url = resource.substr(0, host_end) + std::string(path);
  return oauth::check_proof(
      proof, ProofRequest{.method = method, .url = url, .access_token = access_token}, now,
      replays_);
}

std::string SignIn::metadata_url() const {
  // RFC 9728 §3.1: the well-known path goes between the host and the resource's own path.
  const std::string resource = without_trailing_slash(oauth_.resource);
  const std::size_t host_end = resource.find('/', resource.find("://") + 3);
  if (host_end == std::string::npos) return resource + std::string(kMetadataPath);
  return resource.substr(0, host_end) + std::string(kMetadataPath) + resource.substr(host_end);
}

std::string SignIn::metadata() const {
  json servers = json::array();
  for (const auto& issuer : oauth_.issuers) servers.push_back(issuer.issuer);
  json metadata{{"resource", without_trailing_slash(oauth_.resource)},
                {"authorization_servers", std::move(servers)},
                {"bearer_methods_supported", {"header"}},
                {"resource_name", "OpenAB Switchboard"}};
  if (!oauth_.scopes.empty()) metadata["scopes_supported"] = oauth_.scopes;
  return metadata.dump();
}

}  // namespace sb::supervisor::oauth
