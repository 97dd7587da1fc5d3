// The byte stream a link's WebSocket (and its TLS to the switchboard) runs on: TCP to the
// switchboard or to its proxy, and, for an https:// proxy, TLS to the proxy around that
// TCP, so that the CONNECT tunnel and everything in it run inside it (docs/connect.md,
// "Through a proxy"). One type for both, so that a link is one type whatever its way out.
#pragma once

#include <boost/asio/async_result.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/beast/core/role.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/websocket/teardown.hpp>
#include <memory>

namespace sb {

class TunnelStream {
 public:
  using executor_type = boost::asio::any_io_executor;
  using ProxyTls = boost::asio::ssl::stream<boost::beast::tcp_stream&>;

  // What asio's TLS stream asks of the stream under it.
  using lowest_layer_type = boost::beast::tcp_stream::socket_type;

  explicit TunnelStream(const executor_type& executor) : tcp_(executor) {}

  executor_type get_executor() { return tcp_.get_executor(); }
  // The TCP connection (beast::get_lowest_layer finds it here): connect, timeouts, close.
  boost::beast::tcp_stream& next_layer() { return tcp_; }
  lowest_layer_type& lowest_layer() { return tcp_.socket(); }
  const lowest_layer_type& lowest_layer() const { return tcp_.socket(); }

  // From here on, what is read and written goes through TLS to the proxy; the handshake
  // is the caller's (proxy_tls()).
  ProxyTls& start_proxy_tls(boost::asio::ssl::context& context) {
    proxy_tls_ = std::make_unique<ProxyTls>(tcp_, context);
    return *proxy_tls_;
  }
  bool through_proxy_tls() const { return proxy_tls_ != nullptr; }

  template <class MutableBuffers, class Token>
  auto async_read_some(const MutableBuffers& buffers, Token&& token) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
        [this](auto handler, const MutableBuffers& into) {
          if (proxy_tls_) return proxy_tls_->async_read_some(into, std::move(handler));
          tcp_.async_read_some(into, std::move(handler));
        },
        token, buffers);
  }

  template <class ConstBuffers, class Token>
  auto async_write_some(const ConstBuffers& buffers, Token&& token) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
        [this](auto handler, const ConstBuffers& from) {
          if (proxy_tls_) return proxy_tls_->async_write_some(from, std::move(handler));
          tcp_.async_write_some(from, std::move(handler));
        },
        token, buffers);
  }

 private:
  boost::beast::tcp_stream tcp_;
  std::unique_ptr<ProxyTls> proxy_tls_;
};

// The end of a ws:// link's stream after its close handshake. Over plain TCP, Beast's own
// (shut down sending, read to the end); through TLS to a proxy, the TCP connection is
// shut at once: the proxy ends the tunnel with it.
template <class Handler>
void async_teardown(boost::beast::role_type role, TunnelStream& stream, Handler&& handler) {
  if (!stream.through_proxy_tls())
    return boost::beast::websocket::async_teardown(role, stream.next_layer().socket(),
                                                   std::forward<Handler>(handler));
  boost::system::error_code ignored;
  stream.next_layer().socket().shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
  boost::asio::post(stream.get_executor(), [handler = std::forward<Handler>(handler)]() mutable {
    handler(boost::system::error_code());
  });
}

}  // namespace sb
