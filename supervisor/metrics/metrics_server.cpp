#include "supervisor/metrics/metrics_server.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>

#include "base/asio_names.hpp"
#include "shared/log.hpp"
#include "supervisor/bounds/exhaustion.hpp"
#include "supervisor/metrics/status_page.hpp"
#include "supervisor/switching/descriptors.hpp"

namespace sb::supervisor {

using namespace sb::asio_names;
using namespace std::chrono_literals;

namespace {

// Scrapers are few (a Prometheus, a page or two open): more connections than this are
// closed at once, each request's head must arrive within the deadline, and an idle
// keep-alive connection is closed after it.
constexpr std::size_t kMaxConnections = 32;
constexpr auto kRequestDeadline = 10s;
constexpr auto kWriteDeadline = 10s;
constexpr std::size_t kMaxHeadBytes = 8 * 1024;

// Whether the Host header names an address (or localhost), as a scraper or a browser
// typing the address sends it. A page on some web site whose name its owner points at
// 127.0.0.1 (DNS rebinding) sends its own name instead, and is refused: otherwise a
// browser on this machine would let that page read the metrics.
bool addressed_by_ip(std::string_view host) {
  std::string_view name = host;
  if (name.starts_with('[')) {
    const auto close = name.find(']');
    if (close == std::string_view::npos) return false;
    name = name.substr(1, close - 1);
  } else if (const auto colon = name.rfind(':'); colon != std::string_view::npos) {
    name = name.substr(0, colon);
  }
  if (name == "localhost") return true;
  boost::system::error_code error;
  net::ip::make_address(std::string(name), error);
  return !error;
}

http::response<http::string_body> answer(const http::request<http::empty_body>& request,
                                         const std::function<std::string()>& scrape) {
  http::response<http::string_body> response(http::status::ok, request.version());
  response.keep_alive(request.keep_alive());
  response.set(http::field::cache_control, "no-store");
  response.set("X-Content-Type-Options", "nosniff");
  const auto target = request.target();
  const bool known = target == "/metrics" || target == "/";
  if (!addressed_by_ip(request[http::field::host])) {
    response.result(http::status::forbidden);
    response.set(http::field::content_type, "text/plain; charset=utf-8");
    response.body() = "this listener answers requests addressed to its IP address or localhost\n";
  } else if (!known) {
    response.result(http::status::not_found);
    response.set(http::field::content_type, "text/plain; charset=utf-8");
    response.body() = "not found: this listener serves /metrics and / (the status page)\n";
  } else if (request.method() != http::verb::get && request.method() != http::verb::head) {
    response.result(http::status::method_not_allowed);
    response.set(http::field::allow, "GET, HEAD");
    response.set(http::field::content_type, "text/plain; charset=utf-8");
    response.body() = "only GET and HEAD\n";
  } else if (target == "/metrics") {
    response.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
    response.body() = scrape();
  } else {
    response.set(http::field::content_type, "text/html; charset=utf-8");
    // The page is self-contained: it may run nothing from anywhere else.
    response.set("Content-Security-Policy",
                 "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
                 "connect-src 'self'; base-uri 'none'; form-action 'none'; "
                 "frame-ancestors 'none'");
    response.body() = std::string(status_page_html());
  }
  response.prepare_payload();
  if (request.method() == http::verb::head) response.body().clear();
  return response;
}

}  // namespace

struct MetricsServer::Impl : std::enable_shared_from_this<MetricsServer::Impl> {
  Impl(net::io_context& io, std::function<std::string()> scrape)
      : acceptor(io), scrape(std::move(scrape)), pause(io.get_executor(), "metrics") {}

  void accept() {
    acceptor.async_accept([self = shared_from_this()](beast::error_code error, tcp::socket socket) {
      if (error == net::error::operation_aborted || !self->acceptor.is_open()) return;
      if (self->pause.pause_on(error, [self] { self->accept(); })) return;
      if (!error && self->open < kMaxConnections) {
        net::co_spawn(self->acceptor.get_executor(), serve(self, std::move(socket)), net::detached);
      }
      self->accept();
    });
  }

  // One connection: requests answered in turn until the client closes, stays idle past
  // the deadline, or sends something that is not a small GET.
  // The connection's place under kMaxConnections, given back however serve() ends.
  struct Place {
    explicit Place(std::size_t& open) : open(open) { ++open; }
    ~Place() { --open; }
    std::size_t& open;
  };

  static net::awaitable<void> serve(std::shared_ptr<Impl> self, tcp::socket socket) {
    const Place place(self->open);
    beast::tcp_stream stream(std::move(socket));
    beast::flat_buffer buffer(kMaxHeadBytes);
    for (;;) {
      http::request_parser<http::empty_body> parser;
      parser.header_limit(kMaxHeadBytes);
      stream.expires_after(kRequestDeadline);
      auto [read_error, read] = co_await http::async_read(stream, buffer, parser, kAwait);
      if (read_error) break;
      auto response = answer(parser.get(), self->scrape);
      const bool keep_alive = response.keep_alive();
      stream.expires_after(kWriteDeadline);
      auto [write_error, written] = co_await http::async_write(stream, response, kAwait);
      if (write_error || !keep_alive) break;
    }
    beast::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  }

  tcp::acceptor acceptor;
  std::function<std::string()> scrape;
  AcceptPause pause;
  std::size_t open = 0;
};

MetricsServer::MetricsServer(net::io_context& io, const config::ListenAddress& address,
                             std::function<std::string()> scrape, base::UniqueFd listener)
    : impl_(std::make_shared<Impl>(io, std::move(scrape))) {
  try {
    const tcp::endpoint endpoint(net::ip::make_address(address.ip), address.port);
    if (listener.valid() && bound_to(listener.get(), address.ip, address.port)) {
      impl_->acceptor.assign(endpoint.protocol(), listener.release());
      return;
    }
    listener.reset();  // one handed over for another address
    impl_->acceptor.open(endpoint.protocol());
    impl_->acceptor.set_option(net::socket_base::reuse_address(true));
    impl_->acceptor.bind(endpoint);
    impl_->acceptor.listen(net::socket_base::max_listen_connections);
  } catch (const boost::system::system_error& error) {
    throw std::runtime_error("binding metrics_listen " + address.display() + ": " +
                             error.code().message());
  }
}

MetricsServer::~MetricsServer() {
  stop();
}

void MetricsServer::start() {
  impl_->accept();
}

void MetricsServer::stop() {
  beast::error_code ignored;
  impl_->acceptor.close(ignored);
  impl_->pause.cancel();
}

int MetricsServer::listener_fd() const {
  return impl_->acceptor.native_handle();
}

base::UniqueFd MetricsServer::release_listener() {
  beast::error_code ignored;
  impl_->pause.cancel();
  impl_->acceptor.cancel(ignored);
  return base::UniqueFd(impl_->acceptor.release(ignored));
}

}  // namespace sb::supervisor
