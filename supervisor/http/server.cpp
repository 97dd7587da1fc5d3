#include "supervisor/http/server.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/error.hpp>

#include "base/asio_names.hpp"
#include "shared/log.hpp"
#include "supervisor/bounds/exhaustion.hpp"
#include "supervisor/http/connection.hpp"

namespace sb::supervisor {

using namespace sb::asio_names;

namespace {

// Each nudge may end its connection, which leaves the map: a copy is walked.
void nudge_all(OpenConnections& open) {
  std::vector<std::function<void()>> nudges;
  for (const auto& [key, nudge] : open.nudges) nudges.push_back(nudge);
  for (const auto& nudge : nudges) nudge();
}

}  // namespace

struct HttpServer::Impl : std::enable_shared_from_this<HttpServer::Impl> {
  Impl(net::io_context& io, const HttpServices& services)
      : acceptor(io), services(services), pause(io.get_executor(), "http") {}

  void accept() {
    if (!accepting) return;
    acceptor.async_accept([self = shared_from_this()](beast::error_code error, tcp::socket socket) {
      if (error == net::error::operation_aborted || !self->acceptor.is_open()) return;
      if (self->pause.pause_on(error, [self] { self->accept(); })) return;
      // One accepted as a switch stopped accepting is served (parked) all the same.
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
  bool accepting = true;  // until a switch stops it
  std::shared_ptr<OpenConnections> open = std::make_shared<OpenConnections>();
};

HttpServer::HttpServer(net::io_context& io, const std::string& ip, unsigned short port,
                       const HttpServices& services, base::UniqueFd listener)
    : impl_(std::make_shared<Impl>(io, services)) {
  const std::string shown = ip.find(':') != std::string::npos
                                ? "[" + ip + "]:" + std::to_string(port)
                                : ip + ":" + std::to_string(port);
  try {
    const tcp::endpoint endpoint(net::ip::make_address(ip), port);
    if (listener.valid() && bound_to(listener.get(), ip, port)) {
      impl_->acceptor.assign(endpoint.protocol(), listener.release());
      return;
    }
    listener.reset();  // one handed over for another address
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

int HttpServer::listener_fd() const {
  return impl_->acceptor.native_handle();
}

void HttpServer::stop_accepting() {
  impl_->accepting = false;
  beast::error_code ignored;
  impl_->acceptor.cancel(ignored);
  impl_->pause.cancel();
}

base::UniqueFd HttpServer::release_listener() {
  beast::error_code ignored;
  return base::UniqueFd(impl_->acceptor.release(ignored));
}

void HttpServer::park_connections(std::function<void()> done) {
  auto& open = *impl_->open;
  open.park = std::make_shared<ConnectionPark>(open.nudges.size(), std::move(done));
  nudge_all(open);
}

void HttpServer::let_calls_park() {
  auto& open = *impl_->open;
  if (!open.park) return;
  open.park->let_calls_park();
  nudge_all(open);
}

void HttpServer::give_up_parking() {
  auto& open = *impl_->open;
  if (!open.park) return;
  open.park->give_up();
  nudge_all(open);
}

std::vector<CarriedConnection> HttpServer::take_parked_connections() {
  const auto& park = impl_->open->park;
  return park ? park->take_connections() : std::vector<CarriedConnection>{};
}

std::vector<NamedDescriptor> HttpServer::take_parked_sockets() {
  const auto& park = impl_->open->park;
  return park ? park->take_sockets() : std::vector<NamedDescriptor>{};
}

void HttpServer::take_up_connections(std::vector<CarriedConnection> connections,
                                     std::vector<NamedDescriptor>& descriptors,
                                     std::function<void()> heard) {
  // Held by each connection until its carried request is routed; the last to let go
  // (this function's, when none has a call) tells.
  const std::shared_ptr<void> unheard(nullptr, [heard = std::move(heard)](void*) { heard(); });
  for (auto& connection : connections) {
    const auto named = std::find_if(descriptors.begin(), descriptors.end(), [&](const auto& entry) {
      return entry.name == connection.socket;
    });
    if (named == descriptors.end()) continue;
    base::UniqueFd fd = std::move(named->fd);
    descriptors.erase(named);
    beast::error_code error;
    tcp::socket socket(impl_->acceptor.get_executor());
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&address), &length);
    socket.assign(address.ss_family == AF_INET6 ? tcp::v6() : tcp::v4(), fd.release(), error);
    if (error) continue;
    take_up_connection(std::move(socket), impl_->services, impl_->open, std::move(connection.bytes),
                       connection.call, connection.call ? unheard : nullptr);
  }
}

}  // namespace sb::supervisor
