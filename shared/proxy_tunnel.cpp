#include "shared/proxy_tunnel.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "shared/tls_client.hpp"

namespace sb {
namespace {

namespace net = boost::asio;
constexpr auto kAwait = net::as_tuple(net::use_awaitable);

net::awaitable<std::string> proxy_handshake(TunnelStream& stream, const ProxyHop& hop,
                                            net::ssl::context* tls) {
  if (!tls) co_return "the proxy " + hop.proxy.host_header + " needs TLS, and none is set up";
  auto& proxy_tls = stream.start_proxy_tls(*tls);
  SSL* handle = proxy_tls.native_handle();
  if (auto problem = prepare_tls(handle, hop.proxy.host); !problem.empty()) co_return problem;
  const auto [error] = co_await proxy_tls.async_handshake(net::ssl::stream_base::client, kAwait);
  if (error) co_return tls_failure(handle, "the proxy " + hop.proxy.host_header, error);
  co_return std::string();
}

}  // namespace

net::awaitable<std::string> open_proxy_tunnel(TunnelStream& stream, const ProxyHop& hop,
                                              const DialTarget& target, net::ssl::context* tls,
                                              std::chrono::steady_clock::duration timeout) {
  stream.next_layer().expires_after(timeout);
  if (hop.proxy.tls) {
    if (auto problem = co_await proxy_handshake(stream, hop, tls); !problem.empty())
      co_return problem;
  }
  const std::string proxy = "the proxy " + hop.proxy.host_header;
  const std::string request = connect_request(target, hop.authorization);
  const auto [write_error, written] =
      co_await net::async_write(stream, net::buffer(request), kAwait);
  if (write_error) co_return proxy + ": " + write_error.message();
  std::string answer;
  auto buffer = net::dynamic_buffer(answer, kMaxProxyAnswerBytes);
  const auto [read_error, head_size] =
      co_await net::async_read_until(stream, buffer, "\r\n\r\n", kAwait);
  if (read_error == net::error::not_found)
    co_return proxy + " answered CONNECT with more than " +
        std::to_string(kMaxProxyAnswerBytes / 1024) + " KiB of head";
  if (read_error) co_return proxy + ": " + read_error.message();
  if (auto refusal = tunnel_refusal(answer, !hop.authorization.empty()); !refusal.empty())
    co_return proxy + ": " + refusal;
  if (answer.size() != head_size) co_return proxy + " sent bytes into the tunnel unasked";
  co_return std::string();
}

}  // namespace sb
