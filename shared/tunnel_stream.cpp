#include "shared/tunnel_stream.hpp"

namespace sb {

TunnelStream::TunnelStream(const executor_type& executor) : tcp_(executor) {}

TunnelStream::~TunnelStream() = default;

TunnelStream::ProxyTls& TunnelStream::start_proxy_tls(boost::asio::ssl::context& context) {
  proxy_tls_ = std::make_unique<ProxyTls>(tcp_, context);
  return *proxy_tls_;
}

void TunnelStream::read_some(std::span<const boost::asio::mutable_buffer> into, Handler handler) {
  if (proxy_tls_) return proxy_tls_->async_read_some(into, std::move(handler));
  tcp_.async_read_some(into, std::move(handler));
}

void TunnelStream::write_some(std::span<const boost::asio::const_buffer> from, Handler handler) {
  if (proxy_tls_) return proxy_tls_->async_write_some(from, std::move(handler));
  tcp_.async_write_some(from, std::move(handler));
}

}  // namespace sb
