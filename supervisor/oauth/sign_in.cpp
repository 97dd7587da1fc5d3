#include "supervisor/oauth/sign_in.hpp"

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <nlohmann/json.hpp>

#include "shared/log.hpp"
#include "shared/secret_file.hpp"
#include "shared/verifier.hpp"
#include "supervisor/oauth/introspection.hpp"

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

// A token's SHA-256, by which it is remembered: never its text.
std::string digest_of(std::string_view token) {
  const Verifier digest = verifier_of(token);
  return std::string(digest.digest.begin(), digest.digest.end());
}

// The resource without a trailing slash, so that "https://sb.example/" and
// "https://sb.example" are the one audience they are.
std::string without_trailing_slash(std::string url) {
  while (url.size() > 1 && url.back() == '/') url.pop_back();
  return url;
}

}  // namespace

SignIn::SignIn(boost::asio::io_context& io, OutboundClient& client, config::OAuth oauth,
               std::chrono::milliseconds refetch)
    : oauth_(std::move(oauth)),
      resource_(origin_and_path(oauth_.resource).value_or(OriginAndPath{})),
      io_(io),
      client_(client) {
  const std::string resource = without_trailing_slash(oauth_.resource);
  for (const auto& issuer : oauth_.issuers) {
    TokenRules rules{.issuer = issuer.issuer,
                     .resource = resource,
                     .algorithms = algorithms_of(issuer.algorithms),
                     .clock_skew = std::chrono::seconds(issuer.clock_skew_secs),
                     .identity_claim = issuer.identity_claim};
    issuers_.push_back(
        Issuer{.rules = std::move(rules),
               .keys = std::make_shared<IssuerKeys>(io, client, issuer, refetch),
               .introspection_url = issuer.introspection_url,
               .introspection_credentials_file = issuer.introspection_credentials_file});
  }
}

SignIn::~SignIn() {
  for (auto& issuer : issuers_) issuer.keys->stop();
}

void SignIn::start() {
  for (auto& issuer : issuers_) {
    issuer.keys->start();
    if (issuer.introspection_url.empty()) continue;
    std::string error;
    const auto credentials = read_secret(issuer.introspection_credentials_file, error);
    if (!credentials || credentials->find(':') == std::string::npos) {
      log_warn(
          "OAuth issuer's introspection credentials unreadable; its opaque tokens are "
          "refused",
          {{"issuer", issuer.rules.issuer},
           {"error", credentials ? std::string("not client_id:client_secret") : error}});
      continue;
    }
    issuer.introspection_authorization = basic_authorization(*credentials);
  }
}

bool SignIn::awaits_introspection(std::string_view token, std::int64_t now) const {
  if (token.size() > kMaxTokenBytes || looks_like_jwt(token)) return false;
  if (std::none_of(issuers_.begin(), issuers_.end(), [](const Issuer& issuer) {
        return !issuer.introspection_authorization.empty();
      }))
    return false;
  const std::string key = digest_of(token);
  if (remembered_.contains(key)) return false;
  const auto refused = refused_.find(key);
  return refused == refused_.end() || refused->second <= now;
}

void SignIn::introspect(std::string token, std::int64_t now, std::function<void()> done) {
  if (introspecting_ >= kMaxIntrospections) return done();
  ++introspecting_;
  boost::asio::co_spawn(
      io_,
      [self = shared_from_this(), token = std::move(token), now]() {
        return self->ask_issuers(token, now);
      },
      [self = shared_from_this(), done = std::move(done)](std::exception_ptr) {
        --self->introspecting_;
        done();
      });
}

boost::asio::awaitable<void> SignIn::ask_issuers(std::string token, std::int64_t now) {
  const std::string key = digest_of(token);
  for (const auto& issuer : issuers_) {
    if (issuer.introspection_authorization.empty()) continue;
    OutboundRequest request{.method = "POST",
                            .url = issuer.introspection_url,
                            .headers = {{"Authorization", issuer.introspection_authorization},
                                        {"Content-Type", "application/x-www-form-urlencoded"},
                                        {"Accept", "application/json"}},
                            .body = introspection_body(token)};
    auto answer = co_await client_.send(std::move(request));
    const auto* response = std::get_if<OutboundResponse>(&answer);
    if (!response || response->status != 200) {
      log_warn("OAuth issuer's introspection failed",
               {{"issuer", issuer.rules.issuer},
                {"error", response ? "HTTP " + std::to_string(response->status)
                                   : std::get<std::string>(answer)}});
      continue;
    }
    auto verdict = read_introspection(response->body, issuer.rules, now);
    if (const auto* identity = std::get_if<TokenIdentity>(&verdict)) {
      // An answer holds as long as the token, and never longer than a few minutes.
      const std::int64_t expires = identity->expires_at
                                       ? identity->expires_at + issuer.rules.clock_skew.count()
                                       : now + kOpaqueRememberedFor;
      remember(key, *identity, std::min(expires, now + kOpaqueRememberedFor));
      co_return;
    }
  }
  refused_[key] = now + kRefusedFor;
  refused_order_.push_back(key);
  while (refused_order_.size() > kRemembered) {
    refused_.erase(refused_order_.front());
    refused_order_.pop_front();
  }
}

std::variant<TokenIdentity, TokenRefusal> SignIn::check(std::string_view token, std::int64_t now) {
  if (token.size() > kMaxTokenBytes) return TokenRefusal{"not a signed JWT"};
  const std::string key = digest_of(token);
  if (const auto found = remembered_.find(key); found != remembered_.end()) {
    if (found->second.valid_until > now) return found->second.identity;
    return TokenRefusal{"expired"};
  }
  if (!looks_like_jwt(token)) return TokenRefusal{"an opaque token no issuer vouched for"};
  auto verdict = check_unremembered(token, now);
  if (const auto* identity = std::get_if<TokenIdentity>(&verdict)) {
    const auto issuer = std::find_if(issuers_.begin(), issuers_.end(), [&](const Issuer& known) {
      return known.rules.issuer == identity->issuer;
    });
    if (issuer != issuers_.end())
      remember(key, *identity, identity->expires_at + issuer->rules.clock_skew.count());
  }
  return verdict;
}

void SignIn::remember(const std::string& digest, const TokenIdentity& identity,
                      std::int64_t valid_until) {
  const Remembered entry{identity, valid_until};
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
  const std::string url = resource_.origin + std::string(path);
  return oauth::check_proof(
      proof, ProofRequest{.method = method, .url = url, .access_token = access_token}, now,
      replays_);
}

std::string SignIn::metadata_url() const {
  // RFC 9728 §3.1: the well-known path goes between the host and the resource's own path.
  return resource_.origin + std::string(kMetadataPath) + resource_.path;
}

std::string SignIn::metadata(std::string_view resource_path) const {
  json servers = json::array();
  for (const auto& issuer : oauth_.issuers) servers.push_back(issuer.issuer);
  json metadata{{"resource", without_trailing_slash(oauth_.resource) + std::string(resource_path)},
                {"authorization_servers", std::move(servers)},
                {"bearer_methods_supported", {"header"}},
                {"resource_name", "OpenAB Switchboard"}};
  if (!oauth_.scopes.empty()) metadata["scopes_supported"] = oauth_.scopes;
  return metadata.dump();
}

}  // namespace sb::supervisor::oauth
