#include "supervisor/oauth/issuer_keys.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <nlohmann/json.hpp>

#include "shared/dial_target.hpp"
#include "shared/log.hpp"

namespace sb::supervisor::oauth {
namespace {

namespace net = boost::asio;
using json = nlohmann::json;

// The documents an issuer's metadata may be at, in the order RFC 8414 §3 and OpenID Connect
// Discovery 1.0 §4 put them: the well-known name inserted before the issuer's path, then
// (OpenID's) appended to it.
std::vector<std::string> metadata_urls(const std::string& issuer) {
  const auto parts = origin_and_path(issuer);
  if (!parts) return {};
  return {parts->origin + "/.well-known/oauth-authorization-server" + parts->path,
          parts->origin + "/.well-known/openid-configuration" + parts->path,
          parts->origin + parts->path + "/.well-known/openid-configuration"};
}

}  // namespace

std::optional<OriginAndPath> origin_and_path(std::string_view url) {
  auto parsed = parse_dial_target(url, UrlKind::kHttp);
  const auto* target = std::get_if<DialTarget>(&parsed);
  if (!target) return std::nullopt;
  std::string path = target->target.substr(0, target->target.find('?'));
  while (!path.empty() && path.back() == '/') path.pop_back();
  return OriginAndPath{(target->tls ? "https://" : "http://") + target->host_header,
                       std::move(path)};
}

IssuerKeys::IssuerKeys(net::io_context& io, OutboundClient& client, config::OAuthIssuer issuer,
                       std::chrono::milliseconds refetch)
    : io_(io), client_(client), issuer_(std::move(issuer)), refetch_(refetch), wake_(io) {}

void IssuerKeys::start() {
  net::co_spawn(
      io_, [self = shared_from_this()]() { return self->keep_fresh(); }, net::detached);
}

void IssuerKeys::stop() {
  stopped_ = true;
  wake_.cancel();
}

void IssuerKeys::key_unknown() {
  const auto now = std::chrono::steady_clock::now();
  if (stopped_ || (last_fetch_ && now - *last_fetch_ < refetch_)) return;
  wake_.cancel();  // keep_fresh fetches at once
}

net::awaitable<void> IssuerKeys::keep_fresh() {
  while (!stopped_) {
    last_fetch_ = std::chrono::steady_clock::now();
    co_await fetch();
    if (stopped_) break;
    wake_.expires_after(kRefreshEvery);
    boost::system::error_code ignored;
    co_await wake_.async_wait(net::redirect_error(net::use_awaitable, ignored));
    // A wake-up before the hour (an unknown key) waits out the minute since the last fetch.
    const auto since = std::chrono::steady_clock::now() - *last_fetch_;
    if (!stopped_ && since < refetch_) {
      wake_.expires_after(refetch_ - since);
      co_await wake_.async_wait(net::redirect_error(net::use_awaitable, ignored));
    }
  }
}

net::awaitable<std::optional<std::string>> IssuerKeys::jwks_url() {
  if (!issuer_.jwks_url.empty()) co_return issuer_.jwks_url;
  if (!discovered_jwks_url_.empty()) co_return discovered_jwks_url_;
  for (const std::string& url : metadata_urls(issuer_.issuer)) {
    // A named request, moved in: g++ 12 frees a temporary in a co_await twice.
    OutboundRequest request{.url = url};
    auto answer = co_await client_.send(std::move(request));
    const auto* response = std::get_if<OutboundResponse>(&answer);
    if (!response || response->status != 200) continue;
    const json metadata = json::parse(response->body, nullptr, /*allow_exceptions=*/false);
    // The metadata must be the issuer's own (RFC 8414 §3.3), and name where its keys are.
    if (!metadata.is_object() || metadata.value("issuer", json()) != issuer_.issuer) continue;
    const json keys = metadata.value("jwks_uri", json());
    if (!keys.is_string()) continue;
    // Over TLS, or to this machine (as the configuration allows an issuer).
    const std::string& found = keys.get_ref<const std::string&>();
    auto where = parse_dial_target(found, UrlKind::kHttp);
    const auto* target = std::get_if<DialTarget>(&where);
    if (!target || !(target->tls || target->loopback)) continue;
    discovered_jwks_url_ = found;
    co_return discovered_jwks_url_;
  }
  co_return std::nullopt;
}

net::awaitable<void> IssuerKeys::fetch() {
  const auto url = co_await jwks_url();
  if (!url) {
    log_warn(
        "OAuth issuer's metadata names no usable jwks_uri; its tokens are refused until it "
        "does",
        {{"issuer", issuer_.issuer}});
    co_return;
  }
  OutboundRequest request{.url = *url};
  auto answer = co_await client_.send(std::move(request));
  if (const auto* failure = std::get_if<std::string>(&answer)) {
    log_warn("OAuth issuer's keys could not be fetched; the last ones are kept",
             {{"issuer", issuer_.issuer}, {"error", *failure}});
    co_return;
  }
  const auto& response = std::get<OutboundResponse>(answer);
  if (response.status != 200) {
    log_warn("OAuth issuer's keys could not be fetched; the last ones are kept",
             {{"issuer", issuer_.issuer}, {"status", std::to_string(response.status)}});
    co_return;
  }
  auto read = read_key_set(response.body);
  if (const auto* why = std::get_if<std::string>(&read)) {
    log_warn("OAuth issuer's key set refused; the last one is kept",
             {{"issuer", issuer_.issuer}, {"error", *why}});
    co_return;
  }
  keys_ = std::move(std::get<std::vector<PublicKey>>(read));
  log_info("OAuth issuer's keys fetched",
           {{"issuer", issuer_.issuer}, {"keys", std::to_string(keys_.size())}});
}

}  // namespace sb::supervisor::oauth
