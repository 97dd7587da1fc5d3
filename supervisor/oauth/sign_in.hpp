// Callers who sign in with an OAuth 2.1 access token (docs/auth.md): the switchboard as a
// resource server of the issuers [oauth] names. A token is checked against the issuer it
// claims, with that issuer's keys; which caller it is, the client table says.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
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

class SignIn : public std::enable_shared_from_this<SignIn> {
 public:
  // `refetch`: how often at most an unknown key fetches an issuer's keys again.
  SignIn(boost::asio::io_context& io, OutboundClient& client, config::OAuth oauth,
         std::chrono::milliseconds refetch);
  ~SignIn();
  SignIn(const SignIn&) = delete;
  SignIn& operator=(const SignIn&) = delete;

  // Fetches every issuer's keys now and keeps them fresh until destroyed, and reads the
  // credentials it introspects opaque tokens with.
  void start();

  // `token` checked at `now` (seconds since the epoch): who it names, or why not. A token
  // naming a key its issuer's set lacks has that set fetched again (at most once a minute).
  // A token found valid is remembered (by its SHA-256, never its text) until it expires, at
  // most kRemembered of them, so that a caller's next requests cost a lookup, not a
  // signature check.
  // An opaque token is valid only once an issuer's introspection has said so
  // (awaits_introspection, introspect).
  std::variant<TokenIdentity, TokenRefusal> check(std::string_view token, std::int64_t now);

  // Whether `token` is opaque, not yet vouched for or refused, and an issuer introspects.
  bool awaits_introspection(std::string_view token, std::int64_t now) const;
  // Asks each introspecting issuer about `token` in turn until one vouches for it, then
  // calls `done` (on the loop, whatever the outcome): check() then knows. At most
  // kMaxIntrospections at once; past that `done` is called at once and the token is
  // refused. A refusal is remembered for kRefusedFor, so that a flood of made-up tokens
  // is not a flood of requests to the issuer.
  void introspect(std::string token, std::int64_t now, std::function<void()> done);

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
  // The metadata itself, as JSON text: of the switchboard, or with a computer's URL's
  // path (is_resource_path), of that URL (RFC 9728 §3.3).
  std::string metadata(std::string_view resource_path = {}) const;

 private:
  struct Issuer {
    TokenRules rules;
    std::shared_ptr<IssuerKeys> keys;
    std::string introspection_url;  // "" when it does not introspect
    std::filesystem::path introspection_credentials_file;
    std::string introspection_authorization;  // read by start(); "" when unreadable
  };
  boost::asio::awaitable<void> ask_issuers(std::string token, std::int64_t now);
  std::variant<TokenIdentity, TokenRefusal> check_unremembered(std::string_view token,
                                                               std::int64_t now) const;
  void remember(const std::string& digest, const TokenIdentity& identity, std::int64_t valid_until);

  config::OAuth oauth_;
  OriginAndPath resource_;  // of oauth_.resource, parsed once
  std::vector<Issuer> issuers_;
  struct Remembered {
    TokenIdentity identity;
    std::int64_t valid_until = 0;  // its expiry and the issuer's skew
  };
  std::unordered_map<std::string, Remembered> remembered_;  // by the token's SHA-256
  std::deque<std::string> remembered_order_;                // oldest first
  ProofReplays replays_;
  boost::asio::io_context& io_;
  OutboundClient& client_;
  std::unordered_map<std::string, std::int64_t> refused_;  // opaque tokens, by SHA-256
  std::deque<std::string> refused_order_;
  int introspecting_ = 0;
};

inline constexpr int kMaxIntrospections = 16;
inline constexpr std::int64_t kRefusedFor = 30;            // seconds
inline constexpr std::int64_t kOpaqueRememberedFor = 300;  // seconds, at most

inline constexpr std::size_t kRemembered = 4096;

// The path of the protected resource metadata a caller fetches from the switchboard.
inline constexpr std::string_view kMetadataPath = "/.well-known/oauth-protected-resource";

}  // namespace sb::supervisor::oauth
