#include "connect/link.hpp"

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>

#include "base/asio_names.hpp"
#include "shared/http_proxy.hpp"
#include "shared/proxy_tunnel.hpp"
#include "shared/tls_client.hpp"

namespace sb::connect {
namespace {

using namespace sb::asio_names;
using Clock = std::chrono::steady_clock;

constexpr std::chrono::seconds kConnectTimeout{10};
constexpr std::chrono::seconds kHandshakeTimeout{10};  // TLS, upgrade, and our close

using PlainWs = websocket::stream<TunnelStream>;
using TlsWs = websocket::stream<beast::ssl_stream<TunnelStream>>;

template <class Ws>
class LinkOver : public Link, public std::enable_shared_from_this<LinkOver<Ws>> {
 public:
  static constexpr bool kTls = std::is_same_v<Ws, TlsWs>;

  LinkOver(net::any_io_executor executor, DialTarget target, std::shared_ptr<ssl::context> tls,
           LinkTimings timings, std::string user_agent, std::optional<ProxyHop> hop)
      : executor_(executor),
        target_(std::move(target)),
        hop_(std::move(hop)),
        tls_(std::move(tls)),
        timings_(timings),
        user_agent_(std::move(user_agent)),
        ws_(make_stream()),
        ping_timer_(executor) {}

  net::awaitable<DialResult> dial(const std::string& secret) override {
    // Through a proxy, the TCP connection is the proxy's, and a tunnel in it the
    // switchboard's.
    const DialTarget& first = hop_ ? hop_->proxy : target_;
    tcp::resolver resolver(executor_);
    const auto [resolve_error, addresses] =
        co_await resolver.async_resolve(first.host, first.port, kAwait);
    if (resolve_error) co_return failed(first.host + ": " + resolve_error.message());
    auto& lowest = beast::get_lowest_layer(*ws_);
    lowest.expires_after(kConnectTimeout);
    const auto [connect_error, peer] = co_await lowest.async_connect(addresses, kAwait);
    if (connect_error)
      co_return failed("connecting to " + first.host_header + ": " + connect_error.message());
    beast::error_code ignored;
    lowest.socket().set_option(tcp::no_delay(true), ignored);
    if (hop_) {
      auto problem = co_await open_proxy_tunnel(tunnel_of(*ws_), *hop_, target_, tls_.get(),
                                                kHandshakeTimeout);
      if (!problem.empty()) co_return failed(std::move(problem));
    }

    lowest.expires_after(kHandshakeTimeout);
    if constexpr (kTls) {
      SSL* handle = ws_->next_layer().native_handle();
      if (auto problem = prepare_tls(handle, target_.host); !problem.empty())
        co_return failed(std::move(problem));
      const auto [tls_error] =
          co_await ws_->next_layer().async_handshake(ssl::stream_base::client, kAwait);
      if (tls_error) co_return failed(tls_failure(handle, target_.host_header, tls_error));
    }
    // From here the WebSocket layer keeps its own handshake timer; liveness is ping_loop's.
    lowest.expires_never();
    ws_->set_option(
        websocket::stream_base::timeout{kHandshakeTimeout, websocket::stream_base::none(), false});
    ws_->set_option(websocket::stream_base::decorator(
        [secret, agent = user_agent_](websocket::request_type& request) {
          if (!secret.empty()) request.set(http::field::authorization, "Bearer " + secret);
          request.set(http::field::user_agent, agent);
        }));
    ws_->read_message_max(kMaxMessageBytes);
    websocket::response_type response;
    const auto [upgrade_error] =
        co_await ws_->async_handshake(response, target_.host_header, target_.target, kAwait);
    if (response.result() == http::status::unauthorized)
      co_return DialResult{DialOutcome::kUnauthorized, "401"};
    if (upgrade_error == websocket::error::upgrade_declined)
      co_return failed("upgrade refused: HTTP " + std::to_string(response.result_int()));
    if (upgrade_error) co_return failed("upgrade: " + upgrade_error.message());

    attached_ = true;
    last_heard_ = Clock::now();
    ws_->text(true);
    // Pings, pongs and close frames count as hearing from the switchboard.
    ws_->control_callback(
        [this](websocket::frame_type, beast::string_view) { last_heard_ = Clock::now(); });
    net::co_spawn(
        executor_, [self = this->shared_from_this()] { return self->ping_loop(); }, net::detached);
    co_return DialResult{DialOutcome::kAttached, {}};
  }

  net::awaitable<std::optional<std::string>> read() override {
    if (ended_) co_return std::nullopt;
    beast::flat_buffer buffer;
    const auto [error, size] = co_await ws_->async_read(buffer, kAwait);
    if (error) {
      finish(error);
      co_return std::nullopt;
    }
    last_heard_ = Clock::now();
    co_return beast::buffers_to_string(buffer.data());
  }

  net::awaitable<bool> write(std::string_view text) override {
    if (ended_) co_return false;
    const auto [error, size] = co_await ws_->async_write(net::buffer(text), kAwait);
    co_return !error;
  }

  void close(std::uint16_t code, std::string_view reason) override {
    if (!attached_) {  // a dial in progress: give it up
      beast::error_code ignored;
      beast::get_lowest_layer(*ws_).socket().close(ignored);
      return;
    }
    if (ended_ || closing_) return;
    closing_ = true;
    closed_with_ = LinkEnd{code, std::string(reason)};
    ws_->async_close(websocket::close_reason(static_cast<websocket::close_code>(code), reason),
                     [self = this->shared_from_this()](beast::error_code) {});
  }

  void drop(std::uint16_t code, std::string_view reason) override {
    if (ended_) return;
    closing_ = true;
    closed_with_ = LinkEnd{code, std::string(reason)};
    beast::error_code ignored;
    beast::get_lowest_layer(*ws_).socket().close(ignored);
  }

  LinkEnd end() const override { return end_; }

 private:
  std::unique_ptr<Ws> make_stream() {
    if constexpr (kTls) {
      return std::make_unique<Ws>(executor_, *tls_);
    } else {
      return std::make_unique<Ws>(executor_);
    }
  }

  static DialResult failed(std::string why) { return {DialOutcome::kFailed, std::move(why)}; }

  void finish(const beast::error_code& error) {
    ended_ = true;
    ping_timer_.cancel();
    // This end closed first: its own code is what ended the link, whatever the other end
    // answered or whether it answered at all (the read then fails as cancelled).
    if (closed_with_) {
      end_ = *closed_with_;
    } else if (error == websocket::error::closed) {
      end_ = {ws_->reason().code,
              std::string(ws_->reason().reason.data(), ws_->reason().reason.size())};
    } else {
      end_ = {1006, dropped_because_.empty() ? error.message() : dropped_because_};
    }
    beast::error_code ignored;
    beast::get_lowest_layer(*ws_).socket().close(ignored);
  }

  // Ping every `ping`; after `silence` without hearing anything (no pong to our pings, nor
  // any frame) the path is dead even if TCP has not noticed: drop the socket, so that the
  // pending read fails and the dial loop takes over. Beast lets a ping wait for a write in
  // progress, so pings need no queue of their own.
  net::awaitable<void> ping_loop() {
    auto next_ping = Clock::now() + timings_.ping;
    while (!ended_) {
      ping_timer_.expires_at(std::min(next_ping, last_heard_ + timings_.silence));
      const auto [error] = co_await ping_timer_.async_wait(kAwait);
      if (error || ended_) co_return;
      const auto now = Clock::now();
      if (now - last_heard_ >= timings_.silence) {
        dropped_because_ = "nothing heard from the switchboard in time";
        beast::error_code ignored;
        beast::get_lowest_layer(*ws_).socket().close(ignored);
        co_return;
      }
      if (now >= next_ping) {
        next_ping = now + timings_.ping;
        if (!closing_) co_await ws_->async_ping({}, kAwait);
      }
    }
  }

  net::any_io_executor executor_;
  DialTarget target_;
  std::optional<ProxyHop> hop_;
  std::shared_ptr<ssl::context> tls_;
  LinkTimings timings_;
  std::string user_agent_;
  std::unique_ptr<Ws> ws_;
  net::steady_timer ping_timer_;
  Clock::time_point last_heard_;
  std::string dropped_because_;
  std::optional<LinkEnd> closed_with_;  // the close this end sent, if it sent one
  LinkEnd end_;
  bool attached_ = false;
  bool closing_ = false;
  bool ended_ = false;
};

}  // namespace

std::shared_ptr<Link> make_link(net::any_io_executor executor, const DialTarget& target,
                                std::shared_ptr<ssl::context> tls, LinkTimings timings,
                                std::string user_agent, std::optional<ProxyHop> hop) {
  if (target.tls)
    return std::make_shared<LinkOver<TlsWs>>(executor, target, std::move(tls), timings,
                                             std::move(user_agent), std::move(hop));
  return std::make_shared<LinkOver<PlainWs>>(executor, target, std::move(tls), timings,
                                             std::move(user_agent), std::move(hop));
}

}  // namespace sb::connect
