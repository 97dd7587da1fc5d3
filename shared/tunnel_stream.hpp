// The byte stream a dialled WebSocket (and its TLS to the server) runs on: TCP to the
// server or to its proxy, and, for an https:// proxy, TLS to the proxy around that TCP,
// so that the CONNECT tunnel and everything in it run inside it (docs/connect.md, "Through
// a proxy"). One type for both, so that a link is one type whatever its way out.
//
// Each operation's handler is type-erased at this boundary and the work done out of line
// (tunnel_stream.cpp): the WebSocket and TLS layers above pass many handler types through,
// and instantiating TLS to the proxy for each of them multiplied their compile time. The
// erased handler keeps no executor of its own: it runs on the stream's, which is the one
// loop of the program that owns it.
#pragma once

#include <algorithm>
#include <array>
#include <boost/asio/async_result.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/beast/core/role.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/websocket/teardown.hpp>
#include <cstddef>
#include <iterator>
#include <memory>
#include <span>
#include <type_traits>

namespace sb {

class TunnelStream {
 public:
  using executor_type = boost::asio::any_io_executor;
  using ProxyTls = boost::asio::ssl::stream<boost::beast::tcp_stream&>;
  // What asio's TLS stream asks of the stream under it.
  using lowest_layer_type = boost::beast::tcp_stream::socket_type;
  // A completion handler of any type, called once.
  class Handler {
   public:
    template <class Inner>
    explicit Handler(Inner&& inner)
        : call_(std::make_unique<Holding<std::decay_t<Inner>>>(std::forward<Inner>(inner))) {}
    void operator()(boost::system::error_code error, std::size_t bytes) {
      const auto call = std::move(call_);
      call->invoke(error, bytes);
    }

   private:
    struct Call {
      virtual ~Call() = default;
      virtual void invoke(boost::system::error_code error, std::size_t bytes) = 0;
    };
    template <class Inner>
    struct Holding final : Call {
      explicit Holding(Inner inner) : inner(std::move(inner)) {}
      void invoke(boost::system::error_code error, std::size_t bytes) override {
        std::move(inner)(error, bytes);
      }
      Inner inner;
    };
    std::unique_ptr<Call> call_;
  };

  explicit TunnelStream(const executor_type& executor);
  ~TunnelStream();

  executor_type get_executor() { return tcp_.get_executor(); }
  // The TCP connection (beast::get_lowest_layer finds it here): connect, timeouts, close.
  boost::beast::tcp_stream& next_layer() { return tcp_; }
  lowest_layer_type& lowest_layer() { return tcp_.socket(); }
  const lowest_layer_type& lowest_layer() const { return tcp_.socket(); }

  // From here on, what is read and written goes through TLS to the proxy; the handshake
  // is the caller's.
  ProxyTls& start_proxy_tls(boost::asio::ssl::context& context);
  bool through_proxy_tls() const { return proxy_tls_ != nullptr; }

  // One read and one write at a time, as on any stream. Of a long buffer sequence the first
  // kMaxBuffers go: a read or write of some is what these promise.
  template <class MutableBuffers, class Token>
  auto async_read_some(const MutableBuffers& buffers, Token&& token) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
        [this](auto handler, const MutableBuffers& into) {
          read_some(gather(into, read_buffers_), Handler(std::move(handler)));
        },
        token, buffers);
  }

  template <class ConstBuffers, class Token>
  auto async_write_some(const ConstBuffers& buffers, Token&& token) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
        [this](auto handler, const ConstBuffers& from) {
          write_some(gather(from, write_buffers_), Handler(std::move(handler)));
        },
        token, buffers);
  }

 private:
  static constexpr std::size_t kMaxBuffers = 8;

  template <class Buffers, class Buffer>
  static std::span<const Buffer> gather(const Buffers& buffers,
                                        std::array<Buffer, kMaxBuffers>& into) {
    auto it = boost::asio::buffer_sequence_begin(buffers);
    const auto available = std::distance(it, boost::asio::buffer_sequence_end(buffers));
    const auto count = std::min(static_cast<std::size_t>(available), kMaxBuffers);
    for (std::size_t i = 0; i < count; ++i, ++it) into[i] = Buffer(*it);
    return {into.data(), count};
  }

  void read_some(std::span<const boost::asio::mutable_buffer> into, Handler handler);
  void write_some(std::span<const boost::asio::const_buffer> from, Handler handler);

  boost::beast::tcp_stream tcp_;
  std::unique_ptr<ProxyTls> proxy_tls_;
  std::array<boost::asio::mutable_buffer, kMaxBuffers> read_buffers_{};
  std::array<boost::asio::const_buffer, kMaxBuffers> write_buffers_{};
};

// The TunnelStream under a WebSocket: right under it (ws://), or under its TLS (wss://).
template <class Ws>
TunnelStream& tunnel_of(Ws& ws) {
  if constexpr (std::is_same_v<std::decay_t<decltype(ws.next_layer())>, TunnelStream>) {
    return ws.next_layer();
  } else {
    return ws.next_layer().next_layer();
  }
}

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
