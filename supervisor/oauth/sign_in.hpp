// Callers who sign in with an OAuth 2.1 access token (docs/auth.md): the switchboard as a
// resource server of the issuers [oauth] names. A token is checked against the issuer it
// claims, with that issuer's keys; which caller it is, the client table says.
#pragma once

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "supervisor/config/config.hpp"
#include "supervisor/oauth/access_token.hpp"
#include "supervisor/oauth/issuer_keys.hpp"
#include "supervisor/oauth/proof.hpp"
#include "supervisor/outbound/http_client.hpp"

namespace sb::supervisor::oauth {

class SignIn {
 public:
  SignIn(boost::asio::io_context& io, OutboundClient& client, config::OAuth oauth);
  ~SignIn();
  SignIn(const SignIn&) = delete;
  SignIn& operator=(const SignIn&) = delete;

  // Fetches every issuer's keys now and keeps them fresh until destroyed.
  void start();

  // `token` checked at `now` (seconds since the epoch): who it names, or why not. A token
  // naming a key its issuer's set lacks has that set fetched again (at most once a minute).
  // A token found valid is remembered (by its SHA-256, never its text) until it expires, at
  // most kRemembered of them, so that a caller's next requests cost a lookup, not a
  // signature check.
  std::variant<TokenIdentity, TokenRefusal> check(std::string_view token, std::int64_t now);

  // A DPoP proof (RFC 9449) checked for a request to `path` (its target's path): the
  // thumbprint of its key, or why not. Its URL is the configured resource's origin with
  // that path, never what a forwarded header says.
  std::variant<std::string, TokenRefusal> check_proof(std::string_view proof,
                                                      std::string_view method,
                                                      std::string_view path,
                                                      std::string_view access_token,
                                                      std::int64_t now);

  const config::OAuth& oauth() const { return oauth_; }
  // Where the switchboard's protected resource metadata is (RFC 9728 §3.1).
  std::string metadata_url() const;
  // The metadata itself, as JSON text.
  std::string metadata() const;

 private:
  struct Issuer {
    TokenRules rules;
    std::shared_ptr<IssuerKeys> keys;
  };
  std::variant<TokenIdentity, TokenRefusal> check_unremembered(std::string_view token,
                                                               std::int64_t now) const;
  void remember(const std::string& digest, const TokenIdentity& identity);

  config::OAuth oauth_;
  std::vector<Issuer> issuers_;
  struct Remembered {
    TokenIdentity identity;
    std::int64_t valid_until = 0;  // its expiry and the issuer's skew
  };
  std::unordered_map<std::string, Remembered> remembered_;  // by the token's SHA-256
  std::deque<std::string> remembered_order_;                // oldest first
  ProofReplays replays_;
};

inline constexpr std::size_t kRemembered = 4096;

// The path of the protected resource metadata a caller fetches from the switchboard.
inline constexpr std::string_view kMetadataPath = "/.well-known/oauth-protected-resource";

}  // namespace sb::supervisor::oauth
