// One issuer's signing keys, kept fresh from its JWKS (docs/auth.md, "Keys"): fetched when
// the switchboard starts (the JWKS URL given, or found in the issuer's metadata, RFC 8414
// or OpenID Connect discovery), again every hour, and again when a token names a key the
// set does not have, at most once a minute; a set once read is kept while the issuer
// cannot be reached. Fetched with the supervisor's one outbound client, TLS verified.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "supervisor/config/config.hpp"
#include "supervisor/oauth/keys.hpp"
#include "supervisor/outbound/http_client.hpp"

namespace sb::supervisor::oauth {

inline constexpr std::chrono::minutes kRefreshEvery{60};

// An http(s) URL's origin ("https://host:port") and its path without a trailing slash
// ("" for none), as the one URL parser reads them (shared/dial_target.hpp); none for a URL
// it refuses.
struct OriginAndPath {
  std::string origin;
  std::string path;
};
std::optional<OriginAndPath> origin_and_path(std::string_view url);

class IssuerKeys : public std::enable_shared_from_this<IssuerKeys> {
 public:
  // `refetch`: how often at most an unknown key fetches the set again (a minute; tests
  // shorten it, shared/timings.hpp).
  IssuerKeys(boost::asio::io_context& io, OutboundClient& client, config::OAuthIssuer issuer,
             std::chrono::milliseconds refetch);

  // Starts fetching; stop() cancels what is under way and ends the refreshes.
  void start();
  void stop();

  const std::vector<PublicKey>& keys() const { return keys_; }
  const config::OAuthIssuer& issuer() const { return issuer_; }
  // A token named a key the set does not have: fetch again, unless that was done within
  // the refetch interval.
  void key_unknown();

 private:
  boost::asio::awaitable<void> keep_fresh();
  boost::asio::awaitable<void> fetch();
  boost::asio::awaitable<std::optional<std::string>> jwks_url();

  boost::asio::io_context& io_;
  OutboundClient& client_;
  config::OAuthIssuer issuer_;
  std::vector<PublicKey> keys_;
  std::string discovered_jwks_url_;
  std::chrono::milliseconds refetch_;
  boost::asio::steady_timer wake_;
  std::optional<std::chrono::steady_clock::time_point> last_fetch_;
  bool stopped_ = false;
};

}  // namespace sb::supervisor::oauth
