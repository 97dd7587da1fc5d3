#include "supervisor/http/server.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <cctype>
#include <deque>
#include <sstream>

#include "base/asio_names.hpp"
#include "shared/log.hpp"
#include "shared/verifier.hpp"
#include "supervisor/bounds/exhaustion.hpp"
#include "supervisor/http/origin_policy.hpp"
#include "supervisor/http/peer_label.hpp"
#include "supervisor/http/request_reader.hpp"
#include "supervisor/routes/routes.hpp"
#include "supervisor/audit/audit_log.hpp"
#include "supervisor/metrics/metrics.hpp"
#include "supervisor/workers/registry.hpp"

namespace sb::supervisor {
namespace {

using namespace sb::asio_names;
using namespace std::chrono_literals;

constexpr auto kRequestReadTimeout = 30s;
// After refusing a request the connection stops writing and reads what the client is still
// sending, for at most this long, before it closes: closing with unread bytes makes the
// kernel send a reset, and the client would lose the answer (docs/robustness.md).
constexpr auto kLingerTime = 30s;
// Sent to a caller that half-closed while its call is pending: a client must skip any 1xx
// (RFC 9110 §15.2), and a caller that is gone altogether answers it with a reset, which
// is how a hang-up is told from a half-close.
constexpr std::string_view kHangUpProbe = "HTTP/1.1 100 Continue\r\n\r\n";
// An event stream (docs/protocol.md, "Progress and event streams"): a comment after this
// long with nothing to send keeps proxies from closing it; and messages beyond either cap
// wait for nobody: they are dropped (the final response never is). One computer message
// may be 16 MiB, so the count alone would bound nothing.
constexpr auto kStreamKeepAlive = 15s;
constexpr std::size_t kMaxQueuedEvents = 256;
constexpr std::size_t kMaxQueuedEventBytes = 16 * 1024 * 1024;
constexpr std::size_t kIdleReadBytes = 16 * 1024;

// An event's data, appended a part at a time: JSON strings cannot hold raw line breaks,
// so any in the text are whitespace between tokens, and each (CR, LF or CRLF, which may
// be split between two parts) starts a new data: line.
class EventData {
 public:
  void append(std::string& event, std::string_view part) {
    if (part.empty()) return;
    std::size_t at = after_cr_ && part.front() == '\n' ? 1 : 0;
    after_cr_ = false;
    while (at < part.size()) {
      const std::size_t line_end = line_break(part, at);
      event.append(part.substr(at, line_end - at));
      if (line_end == part.size()) return;
      event += "\ndata: ";
      at = line_end + 1;
      if (part[line_end] != '\r') continue;
      if (at == part.size()) after_cr_ = true;
      if (at < part.size() && part[at] == '\n') ++at;
    }
  }

 private:
  static std::size_t line_break(std::string_view part, std::size_t from) {
    while (from < part.size() && part[from] != '\r' && part[from] != '\n') ++from;
    return from;
  }

  bool after_cr_ = false;  // the last part ended with a CR, whose LF may start the next
};

constexpr std::string_view kEventOpening = "event: message\ndata: ";
// A large reply on an event stream is framed this much at a time (queue_event_part).
constexpr std::size_t kEventPartBytes = 256 * 1024;

// One server-sent event holding one JSON text.
std::string sse_event(std::string_view head, std::string_view body) {
  std::string event(kEventOpening);
  event.reserve(event.size() + head.size() + body.size() + 2);
  EventData data;
  data.append(event, head);
  data.append(event, body);
  event += "\n\n";
  return event;
}

bool accepts_event_stream(std::string_view accept) {
  // Media types are case-insensitive; a q=0 refusal is not worth parsing for: no MCP
  // client sends one.
  std::string lowered(accept);
  std::transform(lowered.begin(), lowered.end(), lowered.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lowered.find("text/event-stream") != std::string::npos;
}

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

constexpr std::string_view kLastChunk = "0\r\n\r\n";

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
// out between the check and the hand-over is told to stop (docs/protocol.md, "Attach").
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

// The count of open connections, against `[limits] max_connections`: each connection
// holds one place, given back when it is destroyed (or handed over to a worker).
struct OpenConnections {
  std::size_t count = 0;
  LogThrottle refused;
};

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
  Connection(tcp::socket socket, SupervisorState& state, std::shared_ptr<OpenConnections> open)
      : stream_(std::move(socket)),
        state_(state),
        place_(std::move(open)),
        keep_alive_timer_(stream_.get_executor()) {
    beast::error_code error;
    const auto remote = stream_.socket().remote_endpoint(error);
    socket_address_ = error ? "unknown" : endpoint_text(remote);
  }

  void start() { read_request(); }

 private:
  const config::Config& config() const { return *state_.config; }
  RequestLimits request_limits() const {
    return RequestLimits{.max_body_bytes = config().limits.max_request_bytes};
  }
  std::chrono::seconds write_timeout() const {
    return std::chrono::seconds(config().timeouts.write_secs);
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

  // Clients such as curl wait for "100 Continue" before sending a larger body.
  void on_header(beast::error_code error, std::size_t head_bytes) {
    if (error) return on_request(error);
    if (head_over_limit(head_bytes, request_limits())) return refuse(431);
    if (const auto status = refuse_head(*parser_)) return refuse(*status);
    const auto& request = parser_->get();
    if (!parser_->is_done() && beast::iequals(request[http::field::expect], "100-continue")) {
      auto interim =
          std::make_shared<http::response<http::empty_body>>(http::status::continue_, 11);
      stream_.expires_after(write_timeout());
      return http::async_write(
          stream_, *interim,
          [self = shared_from_this(), interim](beast::error_code error, std::size_t) {
            if (error) return self->close();
            self->stream_.expires_after(kRequestReadTimeout);
            self->read_body();
          });
    }
    read_body();
  }

  // A request the server will not take: its status, and a close that lets the client read it.
  void refuse(int status) {
    keep_alive_ = false;
    lingering_ = true;
    write(text_response(status, refusal_text(status)), false);
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

  void read_body() {
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code error, std::size_t) {
                       self->on_request(error);
                     });
  }

  void on_request(beast::error_code error) {
    if (error) {
      if (const auto status = status_for_read_error(error)) return refuse(*status);
      return close();
    }
    stream_.expires_never();
    auto& request = parser_->get();
    keep_alive_ = request.keep_alive();
    head_ = request.method() == http::verb::head;
    // Forwarded identities are believed only when the operator says a trusted proxy is
    // the only way in (README, "Limits and capacity").
    const bool trusted = config().trust_peer_headers;
    const std::string peer =
        peer_label(trusted ? header(request, "Tailscale-User-Login") : std::nullopt,
                   trusted ? header(request, "X-Forwarded-For") : std::nullopt, socket_address_);
    if (request_path(std::string_view(request.target().data(), request.target().size())) ==
            "/vm/attach" &&
        request.method() == http::verb::get) {
      return attach(peer);
    }
    HttpRequest plain{
        .method = std::string(request.method_string()),
        .target = std::string(request.target()),
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
    cors_ = plain.origin && origin_allowed(*state_.config, *plain.origin)
                ? cors_headers(*plain.origin)
                : decltype(cors_){};
    pending_ = true;
    ++request_number_;
    try {
      abandon_ = route_request(
          state_, plain,
          [weak = weak_from_this()](HttpResponse response) {
            if (auto self = weak.lock()) self->on_response(std::move(response));
          },
          [weak = weak_from_this()](std::string head, std::string body) {
            if (auto self = weak.lock()) self->on_event(head, body);
          });
    } catch (const std::exception& error) {
      // A defect in a handler fails its own request, never the process and its computers.
      log_error("internal error while handling a request", {{"error", error.what()}});
      abandon_ = nullptr;
      if (pending_) on_response(text_response(500, "internal error"));
      return;
    }
    if (pending_ && abandon_) watch_for_hangup();
  }

  void on_response(HttpResponse response) {
    if (!pending_) return;  // the caller already hung up
    pending_ = false;
    abandon_ = nullptr;
    if (response.arriving) {
      if (watching_ && !streaming_) {
        beast::error_code ignored;
        stream_.socket().cancel(ignored);
      }
      return write_arriving(std::move(response));
    }
    if (streaming_) {
      // The response is the stream's last event; the hang-up watch must not cancel the
      // stream's writes, and ends by itself (it checks the request number).
      queue_piece(sse_chunk(response.body_head, response.body), std::move(response.lease));
      queue_piece(std::string(kLastChunk));
      return;
    }
    if (watching_) {
      beast::error_code ignored;
      stream_.socket().cancel(ignored);
    }
    write(std::move(response), keep_alive_);
  }

  // A message for the caller before its response: the first one turns the response into
  // an event stream.
  void on_event(std::string_view head, std::string_view body) {
    if (!pending_) return;
    if (!streaming_) start_stream();
    // A caller this far behind loses messages rather than growing the queue, and so do
    // all callers when replies waiting to be read fill the process's budget.
    const std::size_t size = head.size() + body.size();
    if (pieces_.size() >= kMaxQueuedEvents || queued_bytes_ + size > kMaxQueuedEventBytes) return;
    auto lease = state_.services.replies.reserve(size);
    if (!lease) return;
    queue_piece(sse_chunk(head, body), std::move(*lease));
  }

  void start_stream() {
    streaming_ = true;
    queue_piece(head_text(HttpResponse{200,
                                       {{"Content-Type", "text/event-stream"},
                                        {"Cache-Control", "no-cache"},
                                        {"X-Accel-Buffering", "no"}}},
                          std::nullopt));
    schedule_keep_alive();
  }

  // Chunked framing (RFC 9112 §7.1) is one line of hex and a CRLF each side; the stream's
  // pieces are queued as bytes, so they are framed here rather than by a Beast serializer.
  static std::string chunk(std::string_view data) {
    std::ostringstream framed;
    framed << std::hex << data.size() << "\r\n" << data << "\r\n";
    return framed.str();
  }

  static std::string sse_chunk(std::string_view head, std::string_view body) {
    return chunk(sse_event(head, body));
  }

  void schedule_keep_alive() {
    keep_alive_timer_.expires_after(kStreamKeepAlive);
    keep_alive_timer_.async_wait([weak = weak_from_this()](beast::error_code error) {
      auto self = weak.lock();
      if (error || !self || !self->streaming_ || !self->pending_) return;
      if (self->pieces_.empty()) self->queue_piece(chunk(": keep-alive\n\n"));
      self->schedule_keep_alive();
    });
  }

  void queue_piece(std::string bytes, ReplyBudget::Lease lease = {}) {
    queued_bytes_ += bytes.size();
    pieces_.push_back(Piece{std::move(bytes), std::move(lease)});
    if (!writing_piece_) write_piece();
  }

  void write_piece() {
    if (pieces_.empty()) {
      writing_piece_ = false;
      if (arrival_ && arrival_->as_event) return queue_event_part();
      if (streaming_ && !pending_) return finish_stream();
      return;
    }
    writing_piece_ = true;
    stream_.expires_after(write_timeout());
    net::async_write(stream_, net::buffer(pieces_.front().bytes),
                     [self = shared_from_this()](beast::error_code error, std::size_t) {
                       self->queued_bytes_ -= self->pieces_.front().bytes.size();
                       self->pieces_.pop_front();
                       if (error) return self->lose_stream();
                       self->write_piece();
                     });
  }

  void finish_stream() {
    streaming_ = false;
    keep_alive_timer_.cancel();
    stream_.expires_never();
    if (!keep_alive_) return close();
    await_next_request();
  }

  // A stream's write failed or timed out: the caller is gone.
  void lose_stream() {
    keep_alive_timer_.cancel();
    pieces_.clear();
    queued_bytes_ = 0;
    writing_piece_ = false;
    streaming_ = false;
    if (pending_) {
      pending_ = false;
      if (auto abandon = std::move(abandon_)) abandon();
    }
    close();
  }

  // While a call is pending nothing is read, so a readable socket means the caller hung
  // up, half-closed (both read as end of stream) or pipelined its next request. Only a
  // hang-up gives the share back; a half-closed caller still reads its reply.
  void watch_for_hangup() {
    watching_ = true;
    stream_.socket().async_wait(
        tcp::socket::wait_read,
        [self = shared_from_this(), number = request_number_](beast::error_code error) {
          self->watching_ = false;
          if (number != self->request_number_ || !self->pending_ ||
              error == net::error::operation_aborted)
            return;
          char byte;
          const auto peeked =
              ::recv(self->stream_.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
          if (!error && peeked > 0) return;  // a pipelined request: answer this one first
          if (!error && peeked == 0) return self->probe_half_close();
          self->hang_up();
        });
  }

  // End of stream: ask the caller's kernel whether anyone is still there. Nothing else is
  // being written while a call is pending without a stream, so the probe goes out at once;
  // a stream's own writes find a caller that is gone.
  void probe_half_close() {
    if (streaming_) return;
    const auto sent = ::send(stream_.socket().native_handle(), kHangUpProbe.data(),
                             kHangUpProbe.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (sent != static_cast<ssize_t>(kHangUpProbe.size())) return hang_up();
    watching_ = true;
    stream_.socket().async_wait(
        tcp::socket::wait_error,
        [self = shared_from_this(), number = request_number_](beast::error_code error) {
          self->watching_ = false;
          if (number != self->request_number_ || !self->pending_ ||
              error == net::error::operation_aborted)
            return;
          self->hang_up();
        });
  }

  void hang_up() {
    pending_ = false;
    if (auto abandon = std::move(abandon_)) abandon();
    close();
  }

  // A reply still arriving from its worker (docs/architecture.md, "Large replies"): its
  // head goes out at once and its body as it comes. The body always ends, whole or failed
  // (a worker that stops half-way is expelled), so the connection waits for it holding
  // itself through the body's follower; a failed body ends the connection, and the caller
  // sees a response cut short.
  void write_arriving(HttpResponse plain) {
    Arrival arrival{.body = std::move(plain.arriving),
                    .head = std::move(plain.body_head),
                    .lease = std::move(plain.lease),
                    .as_event = streaming_};
    if (arrival.as_event) {
      std::string opening(kEventOpening);
      arrival.event_data.append(opening, arrival.head);
      arrival.head = std::move(opening);
    } else {
      arrival.head =
          head_text(plain, arrival.head.size() + arrival.body->size() - 1) + arrival.head;
    }
    arrival_ = std::move(arrival);
    arrival_->body->follow([self = shared_from_this()] { self->write_arrived(); });
    write_arrived();
  }

  void write_arrived() {
    if (!arrival_) return;
    if (arrival_->body->failed()) return abort_arrival();
    if (arrival_->as_event) {
      if (!writing_piece_) queue_event_part();
      return;
    }
    if (!arrival_->writing) write_response_part();
  }

  // One write of what has arrived and is not yet sent, the response head first.
  void write_response_part() {
    Arrival& arrival = *arrival_;
    const std::size_t ready = arrival.unsent();
    if (arrival.head_sent == arrival.head.size() && ready == 0) {
      if (arrival.body_sent == arrival.body->size()) return end_arrival();
      return;  // the next arrival writes on
    }
    const std::array<net::const_buffer, 2> parts{
        net::buffer(arrival.head.data() + arrival.head_sent,
                    arrival.head.size() - arrival.head_sent),
        net::buffer(arrival.body->data() + arrival.body_sent, ready)};
    arrival.writing = true;
    stream_.expires_after(write_timeout());
    net::async_write(
        stream_, parts, [self = shared_from_this()](beast::error_code error, std::size_t written) {
          Arrival& arrival = *self->arrival_;
          arrival.writing = false;
          if (error) return self->abort_arrival();
          const std::size_t of_head = std::min(written, arrival.head.size() - arrival.head_sent);
          arrival.head_sent += of_head;
          arrival.body_sent += written - of_head;
          self->write_arrived();
        });
  }

  // On an event stream the reply is one event, framed a part at a time as its bytes
  // arrive, and the next part only once the caller has taken the last: whatever the
  // reply's size, the stream holds one part's copy.
  void queue_event_part() {
    Arrival& arrival = *arrival_;
    const std::size_t take = std::min(arrival.unsent(), kEventPartBytes);
    std::string part = std::move(arrival.head);  // the event's opening, for the first part
    arrival.head.clear();
    arrival.event_data.append(part, {arrival.body->data() + arrival.body_sent, take});
    arrival.body_sent += take;
    const bool last = arrival.body_sent == arrival.body->size();
    if (last) part += "\n\n";
    if (part.empty()) return;  // the next arrival comes back here
    if (!last) return queue_piece(chunk(part));
    // The reply keeps its lease (and its place in the caps) until its last part is written.
    queue_piece(chunk(part), std::move(arrival.lease));
    queue_piece(std::string(kLastChunk));
    end_arrival();
  }

  void end_arrival() {
    const bool as_event = arrival_->as_event;
    arrival_.reset();      // its lease too: the reply has left
    if (as_event) return;  // the stream's last pieces are queued
    if (!keep_alive_) return close();
    await_next_request();
  }

  // The buffers of a write in progress stay until its handler has run (with an error, the
  // socket being closed).
  void abort_arrival() {
    if (arrival_ && !arrival_->writing) arrival_.reset();
    close();
  }

  // A response's head as this connection sends it: the response's status and fields, this
  // request's CORS headers, whether the connection stays open, and the body's length (or
  // chunked framing, for a stream).
  template <class Body>
  void fill_head(http::response<Body>& response, const HttpResponse& plain,
                 std::optional<std::size_t> content_length, bool keep_alive) const {
    response.result(static_cast<http::status>(plain.status));
    response.version(11);
    for (const auto& [name, value] : plain.headers) response.set(name, value);
    for (const auto& [name, value] : cors_) response.set(name, value);
    response.keep_alive(keep_alive);
    if (content_length) {
      response.content_length(*content_length);
    } else {
      response.chunked(true);
    }
  }

  // The head alone, as text, for a body this connection writes itself.
  std::string head_text(const HttpResponse& plain,
                        std::optional<std::size_t> content_length) const {
    http::response<http::empty_body> response;
    fill_head(response, plain, content_length, keep_alive_);
    std::ostringstream text;
    text << response.base();
    return text.str();
  }

  void write(HttpResponse plain, bool keep_alive) {
    auto response = std::make_shared<http::response<TwoPartBody>>();
    fill_head(*response, plain, plain.body_head.size() + plain.body.size(), keep_alive);
    if (!head_) response->body() = {std::move(plain.body_head), std::move(plain.body)};
    auto lease = std::make_shared<ReplyBudget::Lease>(std::move(plain.lease));
    stream_.expires_after(write_timeout());
    http::async_write(stream_, *response,
                      [self = shared_from_this(), response, lease, keep_alive](
                          beast::error_code error, std::size_t) {
                        if (error) return self->close();
                        if (self->lingering_) return self->linger();
                        if (!keep_alive) return self->close();
                        self->await_next_request();
                      });
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
    if (!token || !state_.services.workers.knows_secret(presented)) {
      state_.services.audit.auth_failure("vm_auth_fail", peer);
      state_.services.metrics.auth_failure("computer");
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
    base::UniqueFd socket(stream_.socket().release());
    const HandOver result = state_.services.workers.hand_over(presented, socket, std::move(bytes), peer);
    if (result == HandOver::kDone) return;
    stream_.socket().assign(protocol, socket.release());
    if (result == HandOver::kWorkerUnavailable) {
      return write(text_response(503, "the computer's worker is restarting; dial again shortly"),
                   false);
    }
    state_.services.audit.write("vm_revoked", {{"peer", peer}, {"at", "attach"}});
    refuse_upgraded(stream_.release_socket(), std::move(request), 4003,
                    "the VM secret was revoked or rotated");
  }

  void close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.socket().close(ignored);
  }

  // A piece of an event stream, holding its share of the reply budget until written.
  struct Piece {
    std::string bytes;
    ReplyBudget::Lease lease;
  };

  // A reply being written as it arrives (write_arriving).
  struct Arrival {
    std::shared_ptr<ipc::ArrivingBody> body;
    // What goes before the body's second byte: the response head and the caller's id as a
    // plain response, the event's opening and the id as an event.
    std::string head;
    ReplyBudget::Lease lease;
    bool as_event = false;
    bool writing = false;
    std::size_t head_sent = 0;
    std::size_t body_sent = 1;  // its opening brace is never sent (ReplyText)
    EventData event_data;       // as an event: the lines' state between parts

    // Arrived and not yet sent: none before the byte after the brace has arrived.
    std::size_t unsent() const {
      const std::size_t arrived = body->arrived();
      return arrived > body_sent ? arrived - body_sent : 0;
    }
  };

  beast::tcp_stream stream_;
  SupervisorState& state_;
  ConnectionPlace place_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::string socket_address_;
  Abandon abandon_;
  std::vector<std::pair<std::string, std::string>> cors_;  // for this request's responses
  std::uint64_t request_number_ = 0;
  bool pending_ = false;
  bool watching_ = false;
  // An event stream in progress: its header, events and last chunk, written in order.
  bool streaming_ = false;
  bool writing_piece_ = false;
  std::deque<Piece> pieces_;
  std::size_t queued_bytes_ = 0;
  net::steady_timer keep_alive_timer_;
  std::optional<Arrival> arrival_;
  bool keep_alive_ = true;
  bool head_ = false;
  bool lingering_ = false;  // the response refuses the request: linger, then close
};

}  // namespace

struct HttpServer::Impl : std::enable_shared_from_this<HttpServer::Impl> {
  Impl(net::io_context& io, SupervisorState& state)
      : acceptor(io), state(state), pause(io.get_executor(), "http") {}

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
    const auto cap = static_cast<std::size_t>(state.config->limits.max_connections);
    if (open->count >= cap) {
      state.services.metrics.connection_refused();
      if (const auto count = open->refused.due()) {
        log_warn("connection refused: [limits] max_connections reached",
                 {{"max_connections", std::to_string(cap)}, {"times", std::to_string(*count)}});
      }
      return;
    }
    beast::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    std::make_shared<Connection>(std::move(socket), state, open)->start();
  }

  tcp::acceptor acceptor;
  SupervisorState& state;
  AcceptPause pause;
  std::shared_ptr<OpenConnections> open = std::make_shared<OpenConnections>();
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

std::size_t HttpServer::open_connections() const {
  return impl_->open->count;
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
