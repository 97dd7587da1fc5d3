#include "supervisor/http/connection.hpp"

#include <algorithm>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <optional>
#include <string>
#include <string_view>

#include "base/asio_names.hpp"
#include "supervisor/http/arriving_reply.hpp"
#include "supervisor/http/event_stream.hpp"
#include "supervisor/http/hang_up_watch.hpp"
#include "supervisor/http/origin_policy.hpp"
#include "supervisor/http/peer_label.hpp"
#include "supervisor/http/plain_response.hpp"
#include "supervisor/http/request_reader.hpp"
#include "supervisor/http/response_head.hpp"

namespace sb::supervisor {
namespace {

using namespace sb::asio_names;
using namespace std::chrono_literals;

constexpr auto kRequestReadTimeout = 30s;
// After refusing a request the connection stops writing and reads what the client is still
// sending, for at most this long, before it closes: closing with unread bytes makes the
// kernel send a reset, and the client would lose the answer (docs/robustness.md).
constexpr auto kLingerTime = 30s;
constexpr std::size_t kIdleReadBytes = 16 * 1024;

std::string endpoint_text(const tcp::endpoint& endpoint) {
  const auto address = endpoint.address();
  if (address.is_v6()) return "[" + address.to_string() + "]:" + std::to_string(endpoint.port());
  return address.to_string() + ":" + std::to_string(endpoint.port());
}

std::optional<std::string_view> header(const Request& request, std::string_view name) {
  const auto found = request.find(name);
  if (found == request.end()) return std::nullopt;
  return std::string_view(found->value().data(), found->value().size());
}

std::optional<std::string> optional_string(std::optional<std::string_view> value) {
  if (!value) return std::nullopt;
  return std::string(*value);
}

bool accepts_event_stream(std::string_view accept) {
  // Media types are case-insensitive; a q=0 refusal is not worth parsing for: no MCP
  // client sends one.
  std::string lowered(accept);
  std::transform(lowered.begin(), lowered.end(), lowered.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lowered.find("text/event-stream") != std::string::npos;
}

class ConnectionPlace {
 public:
  explicit ConnectionPlace(std::shared_ptr<OpenConnections> open) : open_(std::move(open)) {
    ++open_->count;
  }
  ConnectionPlace(const ConnectionPlace&) = delete;
  ConnectionPlace& operator=(const ConnectionPlace&) = delete;
  ~ConnectionPlace() { --open_->count; }

 private:
  std::shared_ptr<OpenConnections> open_;
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, const HttpServices& services,
             std::shared_ptr<OpenConnections> open)
      : stream_(std::move(socket)), services_(services), place_(std::move(open)) {
    beast::error_code error;
    const auto remote = stream_.socket().remote_endpoint(error);
    socket_address_ = error ? "unknown" : endpoint_text(remote);
  }

  void start() {
    watch_.emplace(wire());
    read_request();
  }

 private:
  const config::Config& config() const { return *services_.config; }
  RequestLimits request_limits() const {
    return RequestLimits{.max_body_bytes = config().limits.max_request_bytes};
  }
  Wire wire() {
    return Wire{stream_, weak_from_this(), std::chrono::seconds(config().timeouts.write_secs)};
  }

  // Between requests a keep-alive connection may sit idle for `timeouts.idle_secs`; once
  // a request's first bytes are in, all of it must arrive within the request deadline.
  void await_next_request() {
    if (buffer_.size() > 0) return read_request();  // pipelined: already here
    stream_.expires_after(std::chrono::seconds(config().timeouts.idle_secs));
    stream_.async_read_some(buffer_.prepare(kIdleReadBytes),
                            [self = shared_from_this()](beast::error_code error, std::size_t read) {
                              if (error) return self->close();
                              self->buffer_.commit(read);
                              self->read_request();
                            });
  }

  void read_request() {
    parser_.emplace();
    limit_request(*parser_, request_limits());
    stream_.expires_after(kRequestReadTimeout);
    http::async_read_header(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code error, std::size_t head_bytes) {
          self->on_header(error, head_bytes);
        });
  }

  void on_header(beast::error_code error, std::size_t head_bytes) {
    if (error) return on_request(error);
    if (head_over_limit(head_bytes, request_limits())) return refuse(431);
    if (const auto status = refuse_head(*parser_)) return refuse(*status);
    const auto& request = parser_->get();
    if (parser_->is_done() || !beast::iequals(request[http::field::expect], "100-continue"))
      return read_body();
    stream_.expires_after(std::chrono::seconds(config().timeouts.write_secs));
    net::async_write(stream_, net::buffer(kContinueHead),
                     [self = shared_from_this()](beast::error_code error, std::size_t) {
                       if (error) return self->close();
                       self->stream_.expires_after(kRequestReadTimeout);
                       self->read_body();
                     });
  }

  void read_body() {
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code error, std::size_t) {
                       self->on_request(error);
                     });
  }

  // A request the server will not take: its status, and a close that lets the client read it.
  void refuse(int status) {
    framing_ = Framing{.keep_alive = false};
    refusing_ = true;
    write_plain(text_response(status, refusal_text(status)));
  }

  std::string refusal_text(int status) const {
    switch (status) {
      case 413:
        return "request body over " + std::to_string(config().limits.max_request_bytes) +
               " bytes ([limits] max_request_bytes)";
      case 431:
        return "request header fields too large";
      case 501:
        return "transfer coding not supported; send the body as is or chunked";
      default:
        return "malformed HTTP request";
    }
  }

  void on_request(beast::error_code error) {
    if (error) {
      if (const auto status = status_for_read_error(error)) return refuse(*status);
      return close();
    }
    stream_.expires_never();
    auto& request = parser_->get();
    framing_ = Framing{.keep_alive = request.keep_alive(),
                       .head_only = request.method() == http::verb::head};
    // Forwarded identities are believed only when the operator says a trusted proxy is
    // the only way in (README, "Limits and capacity").
    const bool trusted = config().trust_peer_headers;
    const std::string peer =
        peer_label(trusted ? header(request, "Tailscale-User-Login") : std::nullopt,
                   trusted ? header(request, "X-Forwarded-For") : std::nullopt, socket_address_);
    const std::string_view target(request.target().data(), request.target().size());
    if (request_path(target) == "/vm/attach" && request.method() == http::verb::get)
      return attach(peer);
    HttpRequest plain{
        .method = std::string(request.method_string()),
        .target = std::string(target),
        .authorization = optional_string(header(request, "Authorization")),
        .peer = peer,
        .body = std::move(request.body()),
        .origin = optional_string(header(request, "Origin")),
        .mcp_session_id = optional_string(header(request, "Mcp-Session-Id")),
        .protocol_version = optional_string(header(request, "MCP-Protocol-Version")),
        .mcp_method = optional_string(header(request, "Mcp-Method")),
        .mcp_name = optional_string(header(request, "Mcp-Name")),
        .accepts_event_stream = accepts_event_stream(header(request, "Accept").value_or("")),
    };
    if (plain.origin && origin_allowed(config(), *plain.origin))
      framing_.cors = cors_headers(*plain.origin);
    route(plain);
  }

  // The computer's socket leaves this connection, or it gets its refusal and a close.
  void attach(const std::string& peer) {
    framing_ = Framing{.keep_alive = false};
    auto refusal =
        attach_computer(stream_, parser_->release(), buffer_, peer, services_.computer_door);
    if (!refusal) return;
    write_plain(std::move(*refusal));
  }

  void route(const HttpRequest& request) {
    // The writers of the last response have ended: nothing of theirs is under way.
    events_.reset();
    arriving_.reset();
    pending_ = true;
    const auto weak = weak_from_this();
    try {
      hang_up_ = services_.route(
          request,
          [weak](HttpResponse response) {
            if (auto self = weak.lock()) self->on_response(std::move(response));
          },
          [weak](std::string head, std::string body) {
            if (auto self = weak.lock()) self->on_event(head, body);
          });
    } catch (const std::exception& error) {
      // A defect in a handler fails its own request, never the process and its computers.
      log_error("internal error while handling a request", {{"error", error.what()}});
      hang_up_ = nullptr;
      on_response(text_response(500, "internal error"));
      return;
    }
    if (pending_ && hang_up_) watch_->start([this] { hang_up(); });
  }

  void on_response(HttpResponse response) {
    if (!pending_) return;  // the caller already hung up
    pending_ = false;
    hang_up_ = nullptr;
    watch_->stop();
    if (events_) return events_->finish(std::move(response));
    if (response.arriving) {
      arriving_.emplace(wire(), std::move(response), framing_, [this](bool ok) { written(ok); });
      return arriving_->start();
    }
    write_plain(std::move(response));
  }

  // A message for the caller before its response: the first one turns the response into
  // an event stream.
  void on_event(std::string_view head, std::string_view body) {
    if (!pending_) return;
    if (!events_) {
      watch_->streaming();
      events_.emplace(
          wire(), services_.replies, [this](bool ok) { stream_ended(ok); }, EventStream::Caps{});
      events_->open(framing_);
    }
    events_->event(head, body);
  }

  // A stream that fails before its response has lost its caller.
  void stream_ended(bool ok) {
    if (pending_) return hang_up();
    written(ok);
  }

  void write_plain(HttpResponse response) {
    write_plain_response(wire(), std::move(response), framing_, [this](bool ok) { written(ok); });
  }

  void written(bool ok) {
    if (!ok) return close();
    if (refusing_) return linger();
    if (!framing_.keep_alive) return close();
    await_next_request();
  }

  void hang_up() {
    if (auto hung_up = std::move(hang_up_)) hung_up();
    close();
  }

  // Stops writing and discards what the client still sends, until it closes or the
  // lingering time is up.
  void linger() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.expires_after(kLingerTime);
    discard();
  }

  void discard() {
    buffer_.consume(buffer_.size());
    stream_.async_read_some(buffer_.prepare(kIdleReadBytes),
                            [self = shared_from_this()](beast::error_code error, std::size_t) {
                              if (error) return self->close();
                              self->discard();
                            });
  }

  void close() {
    pending_ = false;
    if (events_) events_->stop();
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.socket().close(ignored);
  }

  beast::tcp_stream stream_;
  const HttpServices& services_;
  ConnectionPlace place_;
  std::string socket_address_;
  beast::flat_buffer buffer_;
  std::optional<RequestParser> parser_;
  // The route has not answered this request yet (a call in flight): one request at a time
  // is read, answered, then written.
  bool pending_ = false;
  Framing framing_;        // of the request being answered
  bool refusing_ = false;  // the response refuses the request: linger, then close
  OnHangUp hang_up_;       // while pending
  std::optional<HangUpWatch> watch_;
  // The writers of the response under way, if it needs more than one write. Each is
  // replaced only once it has ended, when nothing of its is under way.
  std::optional<EventStream> events_;
  std::optional<ArrivingReply> arriving_;
};

}  // namespace

void serve_connection(tcp::socket socket, const HttpServices& services,
                      std::shared_ptr<OpenConnections> open) {
  std::make_shared<Connection>(std::move(socket), services, std::move(open))->start();
}

}  // namespace sb::supervisor
