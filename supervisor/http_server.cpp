#include "supervisor/http_server.hpp"

#include <sys/socket.h>

#include <array>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <sstream>

#include "shared/log.hpp"
#include "shared/verifier.hpp"
#include "supervisor/peer_label.hpp"
#include "supervisor/router.hpp"

namespace sb::supervisor {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using namespace std::chrono_literals;

constexpr std::size_t kMaxBodyBytes = 1024 * 1024;
constexpr auto kRequestReadTimeout = 30s;

// A response body sent as two strings: a relayed reply and, ahead of it, the caller's id
// (see ReplyText). Beast writes both buffers as they are.
struct TwoPartBody {
  struct value_type {
    std::string head;
    std::string tail;
  };

  static std::uint64_t size(const value_type& body) { return body.head.size() + body.tail.size(); }

  class writer {
   public:
    using const_buffers_type = std::array<net::const_buffer, 2>;

    template <bool isRequest, class Fields>
    writer(const http::header<isRequest, Fields>&, const value_type& body) : body_(body) {}

    void init(beast::error_code& error) { error = {}; }

    boost::optional<std::pair<const_buffers_type, bool>> get(beast::error_code& error) {
      error = {};
      return {{const_buffers_type{net::buffer(body_.head), net::buffer(body_.tail)}, false}};
    }

   private:
    const value_type& body_;
  };
};

std::string endpoint_text(const tcp::endpoint& endpoint) {
  const auto address = endpoint.address();
  if (address.is_v6()) return "[" + address.to_string() + "]:" + std::to_string(endpoint.port());
  return address.to_string() + ":" + std::to_string(endpoint.port());
}

std::optional<std::string_view> header(const http::request<http::string_body>& request,
                                       std::string_view name) {
  const auto found = request.find(name);
  if (found == request.end()) return std::nullopt;
  return std::string_view(found->value().data(), found->value().size());
}

std::optional<std::string> optional_string(std::optional<std::string_view> value) {
  if (!value) return std::nullopt;
  return std::string(*value);
}

// Completes an upgrade only to close it with `code`: an attach whose secret was rotated
// out between the check and the hand-over is told to stop (spec §7.2).
void refuse_upgraded(tcp::socket socket, http::request<http::string_body> request,
                     std::uint16_t code, std::string reason) {
  struct Refusal {
    websocket::stream<tcp::socket> ws;
    http::request<http::string_body> request;
  };
  auto refusal = std::make_shared<Refusal>(
      Refusal{websocket::stream<tcp::socket>(std::move(socket)), std::move(request)});
  refusal->ws.async_accept(refusal->request, [refusal, code, reason](beast::error_code error) {
    if (error) return;
    refusal->ws.async_close(
        websocket::close_reason(static_cast<websocket::close_code>(code), reason),
        [refusal](beast::error_code) {});
  });
}

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, SupervisorState& state)
      : stream_(std::move(socket)), state_(state) {
    beast::error_code error;
    const auto remote = stream_.socket().remote_endpoint(error);
    socket_address_ = error ? "unknown" : endpoint_text(remote);
  }

  void start() { read_request(); }

 private:
  void read_request() {
    parser_.emplace();
    parser_->body_limit(kMaxBodyBytes);
    stream_.expires_after(kRequestReadTimeout);
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = shared_from_this()](beast::error_code error, std::size_t) {
                              self->on_header(error);
                            });
  }

  // Clients such as curl wait for "100 Continue" before sending a larger body.
  void on_header(beast::error_code error) {
    if (error) return on_request(error);
    const auto& request = parser_->get();
    if (!parser_->is_done() && beast::iequals(request[http::field::expect], "100-continue")) {
      auto interim =
          std::make_shared<http::response<http::empty_body>>(http::status::continue_, 11);
      return http::async_write(
          stream_, *interim,
          [self = shared_from_this(), interim](beast::error_code error, std::size_t) {
            if (error) return self->close();
            self->read_body();
          });
    }
    read_body();
  }

  void read_body() {
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code error, std::size_t) {
                       self->on_request(error);
                     });
  }

  void on_request(beast::error_code error) {
    if (error == http::error::body_limit) {
      keep_alive_ = false;
      return write(text_response(413, "request body over 1 MiB"), false);
    }
    if (error) return close();
    stream_.expires_never();
    auto& request = parser_->get();
    keep_alive_ = request.keep_alive();
    head_ = request.method() == http::verb::head;
    const std::string peer = peer_label(header(request, "Tailscale-User-Login"),
                                        header(request, "X-Forwarded-For"), socket_address_);
    if (request_path(std::string_view(request.target().data(), request.target().size())) ==
            "/vm/attach" &&
        request.method() == http::verb::get) {
      return attach(peer);
    }
    HttpRequest plain{.method = std::string(request.method_string()),
                      .target = std::string(request.target()),
                      .authorization = optional_string(header(request, "Authorization")),
                      .peer = peer,
                      .body = std::move(request.body())};
    pending_ = true;
    abandon_ = route_request(state_, plain, [weak = weak_from_this()](HttpResponse response) {
      if (auto self = weak.lock()) self->on_response(std::move(response));
    });
    if (pending_ && abandon_) watch_for_hangup();
  }

  void on_response(HttpResponse response) {
    if (!pending_) return;  // the caller already hung up
    pending_ = false;
    abandon_ = nullptr;
    if (watching_) {
      beast::error_code ignored;
      stream_.socket().cancel(ignored);
    }
    write(std::move(response), keep_alive_);
  }

  // While a call is pending nothing is read, so a readable socket means the caller hung
  // up (EOF) or pipelined its next request. Only a hang-up gives the share back.
  void watch_for_hangup() {
    watching_ = true;
    stream_.socket().async_wait(
        tcp::socket::wait_read, [self = shared_from_this()](beast::error_code error) {
          self->watching_ = false;
          if (!self->pending_ || error == net::error::operation_aborted) return;
          char byte;
          const auto peeked =
              ::recv(self->stream_.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
          if (!error && peeked > 0) return;  // a pipelined request: answer this one first
          self->pending_ = false;
          if (auto abandon = std::move(self->abandon_)) abandon();
          self->close();
        });
  }

  void write(HttpResponse plain, bool keep_alive) {
    auto response = std::make_shared<http::response<TwoPartBody>>();
    response->result(static_cast<http::status>(plain.status));
    response->version(11);
    for (auto& [name, value] : plain.headers) response->set(name, value);
    response->keep_alive(keep_alive);
    response->content_length(plain.body_head.size() + plain.body.size());
    if (!head_) response->body() = {std::move(plain.body_head), std::move(plain.body)};
    http::async_write(
        stream_, *response,
        [self = shared_from_this(), response, keep_alive](beast::error_code error, std::size_t) {
          if (error || !keep_alive) return self->close();
          self->read_request();
        });
  }

  void attach(const std::string& peer) {
    auto& request = parser_->get();
    if (!websocket::is_upgrade(request))
      return write(text_response(400, "expected a WebSocket upgrade"), false);
    if (request[http::field::sec_websocket_version] != "13") {
      auto response = text_response(426, "WebSocket version 13 required");
      response.headers.emplace_back("Sec-WebSocket-Version", "13");
      return write(std::move(response), false);
    }
    if (request[http::field::sec_websocket_key].empty())
      return write(text_response(400, "missing Sec-WebSocket-Key"), false);

    const auto token = parse_bearer(std::string(request[http::field::authorization]));
    const Verifier presented = verifier_of(token.value_or(""));
    if (!token || !state_.workers.knows_secret(presented)) {
      state_.audit.auth_failure("vm_auth_fail", peer);
      auto response = unauthorized_response();
      return write(std::move(response), false);
    }
    // The worker completes the handshake from the request and whatever followed it.
    std::ostringstream upgrade;
    upgrade << request;
    std::string bytes = upgrade.str();
    const auto extra = buffer_.cdata();
    bytes.append(static_cast<const char*>(extra.data()), extra.size());

    const tcp protocol = stream_.socket().local_endpoint().protocol();
    ipc::UniqueFd socket(stream_.socket().release());
    const HandOver result = state_.workers.hand_over(presented, socket, std::move(bytes), peer);
    if (result == HandOver::kDone) return;
    stream_.socket().assign(protocol, socket.release());
    if (result == HandOver::kWorkerUnavailable) {
      return write(text_response(503, "the computer's worker is restarting; dial again shortly"),
                   false);
    }
    state_.audit.write("vm_revoked", {{"peer", peer}, {"at", "attach"}});
    refuse_upgraded(stream_.release_socket(), std::move(request), 4003,
                    "the VM secret was revoked or rotated");
  }

  void close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.socket().close(ignored);
  }

  beast::tcp_stream stream_;
  SupervisorState& state_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::string socket_address_;
  Abandon abandon_;
  bool pending_ = false;
  bool watching_ = false;
  bool keep_alive_ = true;
  bool head_ = false;
};

}  // namespace

struct HttpServer::Impl : std::enable_shared_from_this<HttpServer::Impl> {
  Impl(net::io_context& io, SupervisorState& state) : acceptor(io), state(state) {}

  void accept() {
    acceptor.async_accept([self = shared_from_this()](beast::error_code error, tcp::socket socket) {
      if (error == net::error::operation_aborted || !self->acceptor.is_open()) return;
      if (!error) {
        socket.set_option(tcp::no_delay(true), error);
        std::make_shared<Connection>(std::move(socket), self->state)->start();
      }
      self->accept();
    });
  }

  tcp::acceptor acceptor;
  SupervisorState& state;
};

HttpServer::HttpServer(net::io_context& io, const std::string& ip, unsigned short port,
                       SupervisorState& state)
    : impl_(std::make_shared<Impl>(io, state)) {
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

void HttpServer::start() {
  impl_->accept();
}

void HttpServer::stop() {
  beast::error_code ignored;
  impl_->acceptor.close(ignored);
}

}  // namespace sb::supervisor
