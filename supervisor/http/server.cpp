#include "supervisor/http/server.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/error.hpp>

#include "base/asio_names.hpp"
#include "shared/log.hpp"
#include "supervisor/bounds/exhaustion.hpp"
#include "supervisor/http/connection.hpp"

namespace sb::supervisor {

using namespace sb::asio_names;

struct HttpServer::Impl : std::enable_shared_from_this<HttpServer::Impl> {
  Impl(net::io_context& io, const HttpServices& services)
      : acceptor(io), services(services), pause(io.get_executor(), "http") {}

  void accept() {
    acceptor.async_accept([self = shared_from_this()](beast::error_code error, tcp::socket socket) {
      if (error == net::error::operation_aborted || !self->acceptor.is_open()) return;
      if (self->pause.pause_on(error, [self] { self->accept(); })) return;
      if (!error) self->admit(std::move(socket));
      self->accept();
    });
  }

  // Over the cap a connection is closed at once: answering it would take the very
  // buffers and time the cap is there to bound.
  void admit(tcp::socket socket) {
    const auto cap = static_cast<std::size_t>(services.config->limits.max_connections);
    if (open->count >= cap) {
      services.metrics.connection_refused();
      if (const auto count = open->refused.due()) {
        log_warn("connection refused: [limits] max_connections reached",
                 {{"max_connections", std::to_string(cap)}, {"times", std::to_string(*count)}});
      }
      return;
    }
    beast::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    serve_connection(std::move(socket), services, open);
  }

  tcp::acceptor acceptor;
  const HttpServices& services;
  AcceptPause pause;
  std::shared_ptr<OpenConnections> open = std::make_shared<OpenConnections>();
};

HttpServer::HttpServer(net::io_context& io, const std::string& ip, unsigned short port,
                       const HttpServices& services)
    : impl_(std::make_shared<Impl>(io, services)) {
  const std::string shown = ip.find(':') != std::string::npos
                                ? "[" + ip + "]:" + std::to_string(port)
                                : ip + ":" + std::to_string(port);
  try {
    const tcp::endpoint endpoint(net::ip::make_address(ip), port);
    impl_->acceptor.open(endpoint.protocol());
    impl_->acceptor.set_option(net::socket_base::reuse_address(true));
    impl_->acceptor.bind(endpoint);
    impl_->acceptor.listen(net::socket_base::max_listen_connections);
  } catch (const boost::system::system_error& error) {
    throw std::runtime_error("binding " + shown + ": " + error.code().message());
  }
}

HttpServer::~HttpServer() {
  stop();
}

std::size_t HttpServer::open_connections() const {
  return impl_->open->count;
}

unsigned short HttpServer::port() const {
  beast::error_code ignored;
  return impl_->acceptor.local_endpoint(ignored).port();
}

void HttpServer::start() {
  impl_->accept();
}

void HttpServer::stop() {
  beast::error_code ignored;
  impl_->acceptor.close(ignored);
  impl_->pause.cancel();
}

}  // namespace sb::supervisor
