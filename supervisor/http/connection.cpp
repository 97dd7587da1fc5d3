#include "supervisor/http/connection.hpp"

#include <algorithm>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "base/asio_names.hpp"
#include "supervisor/http/arriving_reply.hpp"
#include "supervisor/http/event_stream.hpp"
#include "supervisor/http/hang_up_watch.hpp"
#include "supervisor/http/mcp_headers.hpp"
#include "supervisor/http/origin_policy.hpp"
#include "supervisor/http/peer_label.hpp"
#include "supervisor/http/plain_response.hpp"
#include "supervisor/http/request_reader.hpp"
#include "supervisor/http/response_head.hpp"

namespace sb::supervisor {
namespace {

using namespace sb::asio_names;
using namespace std::chrono_literals;

constexpr std::size_t kIdleReadBytes = 16 * 1024;

// Appended piece by piece: GCC 12 warns falsely (-Wrestrict) on a chain of `+` here.
std::string endpoint_text(const tcp::endpoint& endpoint) {
  const auto address = endpoint.address();
  std::string text = address.is_v6() ? "[" : "";
  text.append(address.to_string());
  text.append(address.is_v6() ? "]:" : ":");
  text.append(std::to_string(endpoint.port()));
  return text;
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

// A connection's place among the open ones: counted against the cap, reachable by a
// switch (its nudge), and reported to a switch exactly once, parked or dropped; one
// destroyed without a word while a switch gathers counts as dropped.
class ConnectionPlace {
 public:
  explicit ConnectionPlace(std::shared_ptr<OpenConnections> open)
      : open_(std::move(open)), key_(open_->next_place++) {
    ++open_->count;
    if (open_->park) open_->park->joined();
  }
  ConnectionPlace(const ConnectionPlace&) = delete;
  ConnectionPlace& operator=(const ConnectionPlace&) = delete;
  ~ConnectionPlace() {
    --open_->count;
    open_->nudges.erase(key_);
    report_dropped();
  }

  void listen(std::function<void()> nudge) { open_->nudges[key_] = std::move(nudge); }
  // The switch gathering connections, until this one has reported to it.
  ConnectionPark* park() const { return reported_ ? nullptr : open_->park.get(); }
  void report_parked(base::UniqueFd socket, std::string bytes, std::optional<CarriedCall> call) {
    if (!park()) return;
    reported_ = true;
    open_->park->parked(std::move(socket), std::move(bytes), call);
  }
  void report_dropped() {
    if (!park()) return;
    reported_ = true;
    open_->park->dropped();
  }

 private:
  std::shared_ptr<OpenConnections> open_;
  std::uint64_t key_;
  bool reported_ = false;
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, const HttpServices& services,
             std::shared_ptr<OpenConnections> open)
      : stream_(std::move(socket)),
        services_(services),
        place_(std::move(open)),
        request_deadline_(stream_.get_executor()),
        lingering_deadline_(stream_.get_executor()) {
    beast::error_code error;
    const auto remote = stream_.socket().remote_endpoint(error);
    socket_address_ = error ? "unknown" : endpoint_text(remote);
  }

  void start() {
    watch_.emplace(wire());
    listen_for_switches();
    read_request();
  }

  // A connection a switch carried: its bytes are read first, and its call taken up.
  void resume(std::string bytes, std::optional<CarriedCall> call, std::shared_ptr<void> unheard) {
    watch_.emplace(wire());
    listen_for_switches();
    const auto into = buffer_.prepare(bytes.size());
    buffer_.commit(net::buffer_copy(into, net::buffer(bytes)));
    carried_ = call;
    unheard_ = std::move(unheard);
    read_request();
  }

 private:
  const config::Config& config() const { return *services_.config; }
  RequestLimits request_limits() const {
    return RequestLimits{.max_body_bytes = config().limits.max_request_bytes};
  }
  Wire wire() {
    return Wire{stream_, weak_from_this(), std::chrono::seconds(config().timeouts.write_secs),
                &services_.metrics};
  }

  // Between requests a keep-alive connection may sit idle for `timeouts.idle_secs`; once
  // a request's first bytes are in, all of it must arrive within the request deadline.
  void await_next_request() {
    if (buffer_.size() > 0) return read_request();  // pipelined: already here
    if (place_.park()) return park_between_requests();
    stage_ = Stage::kIdle;
    stream_.expires_after(std::chrono::seconds(config().timeouts.idle_secs));
    stream_.async_read_some(
        buffer_.prepare(kIdleReadBytes),
        [self = shared_from_this()](beast::error_code error, std::size_t read) {
          self->buffer_.commit(read);
          // A switch cancels the wait; what came meanwhile crosses.
          if (self->place_.park() && (!error || error == net::error::operation_aborted))
            return self->park_between_requests();
          if (error) return self->close();
          self->read_request();
        });
  }

  void read_request() {
    // Bytes of a request that has not been parsed yet cross as they are.
    if (place_.park()) return park_between_requests();
    stage_ = Stage::kRequest;
    parser_.emplace();
    limit_request(*parser_, request_limits());
    start_request_deadline();
    http::async_read_header(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code error, std::size_t head_bytes) {
          self->on_header(error, head_bytes);
        });
  }

  void on_header(beast::error_code error, std::size_t head_bytes) {
    // A switch stopped the read of a head that had not come whole: it crosses as it came.
    if (error == net::error::operation_aborted && place_.park() && !parser_->is_header_done())
      return park_socket(partial_head(*parser_, unparsed()), std::nullopt);
    if (error) return on_request(error);
    if (head_over_limit(head_bytes, request_limits())) return refuse(431);
    if (const auto status = refuse_head(*parser_)) return refuse(*status);
    const auto& request = parser_->get();
    if (parser_->is_done() || !beast::iequals(request[http::field::expect], "100-continue"))
      return read_body();
    wire().begin_write();
    net::async_write(stream_, net::buffer(kContinueHead),
                     [self = shared_from_this()](beast::error_code error, std::size_t) {
                       self->wire().end_write(error);
                       if (error) return self->close();
                       self->stream_.expires_never();
                       self->start_request_deadline();
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
    stage_ = Stage::kWriting;
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
      case 408:
        return "request not received whole within " +
               std::to_string(services_.request_timeout.count() / 1000) + " s of its first byte";
      case 501:
        return "transfer coding not supported; send the body as is or chunked";
      default:
        return "malformed HTTP request";
    }
  }

  // A request must arrive whole in time. Its own timer rather than the stream's, which
  // would close the socket: a caller cut off half-way gets its 408 first.
  void start_request_deadline() {
    stream_.expires_never();
    request_timed_out_ = false;
    request_deadline_.expires_after(services_.request_timeout);
    request_deadline_.async_wait([weak = weak_from_this()](const beast::error_code& error) {
      const auto self = weak.lock();
      // One that fired just as the request came whole finds it being answered: nothing.
      if (error || !self || self->stage_ != Stage::kRequest) return;
      self->request_timed_out_ = true;
      beast::error_code ignored;
      self->stream_.socket().cancel(ignored);
    });
  }

  void on_request(beast::error_code error) {
    request_deadline_.cancel();
    if (error) {
      if (const auto status = status_for_read_error(error)) return refuse(*status);
      // Part of a request came, not all of it in time: the caller is told why it is cut.
      if (request_timed_out_ && (parser_->got_some() || buffer_.size() > 0)) return refuse(408);
      return close();
    }
    stream_.expires_never();
    auto& request = parser_->get();
    // Read whole while a switch began: answered by the next process, not this one.
    if (place_.park()) return park_request(request, request.body(), std::nullopt);
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
    request_ = HttpRequest{
        .method = std::string(request.method_string()),
        .target = std::string(target),
        .authorization = optional_string(header(request, "Authorization")),
        .dpop =
            request.count("DPoP") == 1 ? optional_string(header(request, "DPoP")) : std::nullopt,
        .dpop_headers = static_cast<int>(std::min<std::size_t>(request.count("DPoP"), 2)),
        .peer = peer,
        .body = std::move(request.body()),
        .origin = optional_string(header(request, "Origin")),
        .mcp_session_id = optional_string(header(request, "Mcp-Session-Id")),
        .protocol_version = optional_string(header(request, "MCP-Protocol-Version")),
        .mcp_method = optional_string(header(request, "Mcp-Method")),
        .mcp_name = optional_string(header(request, "Mcp-Name")),
        .last_event_id = optional_string(header(request, "Last-Event-ID")),
        .traceparent = request.count("traceparent") == 1
                           ? optional_string(header(request, "traceparent"))
                           : std::nullopt,
        .tracestate = request.count("tracestate") == 1
                          ? optional_string(header(request, "tracestate"))
                          : std::nullopt,
        .mcp_params = mcp_params(request),
        .repeated_mcp_header = repeated_mcp_header(request),
        .accepts_event_stream = accepts_event_stream(header(request, "Accept").value_or("")),
        .twin_front = header(request, "Switchboard-Twin").has_value(),
        .carried = std::exchange(carried_, std::nullopt),
    };
    if (request_.origin && origin_allowed(config(), *request_.origin))
      framing_.cors = cors_headers(*request_.origin);
    route();
  }

  // The computer's socket leaves this connection, or it gets its refusal and a close.
  void attach(const std::string& peer) {
    stage_ = Stage::kWriting;
    framing_ = Framing{.keep_alive = false};
    auto refusal =
        attach_computer(stream_, parser_->release(), buffer_, peer, services_.computer_door);
    if (!refusal) return;
    write_plain(std::move(*refusal));
  }

  void route() {
    // The writers of the last response have ended: nothing of theirs is under way.
    events_.reset();
    arriving_.reset();
    forwarded_.reset();
    pending_ = true;
    stage_ = Stage::kPending;
    // A call that crossed a switch after its response became an event stream goes on as
    // one: its head was written before.
    if (request_.carried && request_.carried->streaming) open_events(/*head_written=*/true);
    const auto weak = weak_from_this();
    try {
      Underway underway = services_.route(
          request_,
          [weak](HttpResponse response) {
            if (auto self = weak.lock()) self->on_response(std::move(response));
          },
          [weak](std::string head, std::string body, std::string id) {
            if (auto self = weak.lock()) self->on_event(head, body, id);
          });
      hang_up_ = std::move(underway.abandon);
      forwarded_ = underway.call;
    } catch (const std::exception& error) {
      // A defect in a handler fails its own request, never the process and its computers.
      log_error("internal error while handling a request", {{"error", error.what()}});
      hang_up_ = nullptr;
      on_response(text_response(500, "internal error"));
      return;
    }
    unheard_.reset();  // a carried call is taken up by now, or never will be
    if (pending_ && hang_up_) watch_->start([this] { hang_up(); });
  }

  void on_response(HttpResponse response) {
    if (!pending_) return;  // the caller already hung up
    pending_ = false;
    stage_ = Stage::kWriting;
    hang_up_ = nullptr;
    watch_->stop();
    if (response.pauses_stream && !events_) open_events(/*head_written=*/false);
    if (events_) return events_->finish(std::move(response));
    if (response.arriving) {
      arriving_.emplace(wire(), std::move(response), framing_, [this](bool ok) { written(ok); });
      return arriving_->start();
    }
    write_plain(std::move(response));
  }

  // A message for the caller before its response: the first one turns the response into
  // an event stream.
  void on_event(std::string_view head, std::string_view body, std::string_view id) {
    if (!pending_) return;
    if (!events_) open_events(/*head_written=*/false);
    if (!head.empty() || !body.empty()) return events_->event(head, body, id);
    if (!id.empty()) events_->prime(id);
  }

  void open_events(bool head_written) {
    watch_->streaming([this] {
      if (events_) events_->keep_alive_now();
    });
    events_.emplace(
        wire(), services_.replies, [this](bool ok) { stream_ended(ok); }, EventStream::Caps{});
    events_->when_idle([this] { maybe_park(); });
    if (head_written) return events_->resume();
    events_->open(framing_);
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
  // lingering time is up: closing with unread bytes would make the kernel send a reset, and
  // the client would lose its refusal (docs/robustness.md). A client that closes gets it in
  // order; one still sending at the end of the lingering time is cut with a reset. The
  // time is a timer of its own: the stream's expiry is missed by reads that complete at
  // once, and a client that never stops sending always has bytes to read.
  void linger() {
    if (place_.park()) return close();  // a refused request: nothing to carry
    stage_ = Stage::kLingering;
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    reset_on_close(stream_.socket(), true);
    stream_.expires_never();
    lingering_deadline_.expires_after(services_.lingering_time);
    lingering_deadline_.async_wait([weak = weak_from_this()](const beast::error_code& error) {
      const auto self = weak.lock();
      if (error || !self || self->stage_ != Stage::kLingering) return;
      self->services_.metrics.connection_cut(kCutLingering);
      self->close();
    });
    discard();
  }

  void discard() {
    buffer_.consume(buffer_.size());
    stream_.async_read_some(buffer_.prepare(kIdleReadBytes),
                            [self = shared_from_this()](beast::error_code error, std::size_t) {
                              if (self->stage_ != Stage::kLingering) return;  // cut
                              if (!error) return self->discard();
                              reset_on_close(self->stream_.socket(), false);
                              self->close();
                            });
  }

  void close() {
    pending_ = false;
    stage_ = Stage::kDone;
    request_deadline_.cancel();
    lingering_deadline_.cancel();
    if (events_) events_->stop();
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.socket().close(ignored);
    place_.report_dropped();
  }

  // ---- switching (docs/architecture.md, "Switching") ----

  void listen_for_switches() {
    place_.listen([weak = weak_from_this()] {
      if (const auto self = weak.lock()) self->maybe_park();
    });
  }

  // A switch is gathering connections, or what it waits for changed: park now if this
  // connection can; otherwise whatever is under way comes back here when it is done.
  void maybe_park() {
    ConnectionPark* park = place_.park();
    if (!park) return;
    if (park->giving_up()) return close();
    switch (stage_) {
      case Stage::kIdle: {
        // Its handler parks with what the read brought.
        beast::error_code ignored;
        stream_.socket().cancel(ignored);
        return;
      }
      case Stage::kPending:
        // A stream that is no call's (a caller's GET stream) ends: its head was written,
        // and the request, taken up again, would write another. The caller opens it
        // again; what it was for (subscriptions) crosses in the switch's state.
        if (events_ && !forwarded_) return end_standalone_stream();
        if (park->calls_may_park() && !(events_ && !events_->idle())) return park_call();
        return;
      case Stage::kRequest: {
        // A head not yet whole (a slow caller's, or one that never finishes) crosses with
        // what has come, rather than holding the switch for the drain's time; a request
        // whose body is being read comes back here when it is whole, and one whose read
        // has not started parks as it starts.
        if (!parser_ || parser_->is_header_done()) return;
        beast::error_code ignored;
        stream_.socket().cancel(ignored);
        return;
      }
      case Stage::kLingering:
        return close();  // a refused request: nothing to carry
      default:
        return;  // a request read or a response written: it comes back here
    }
  }

  void end_standalone_stream() {
    hang_up_ = nullptr;  // not hung up: what the stream was for crosses the switch
    watch_->stop();
    close();
  }

  // What was read and not parsed yet.
  std::string_view unparsed() const {
    const auto data = buffer_.cdata();
    return {static_cast<const char*>(data.data()), data.size()};
  }

  void park_between_requests() { park_socket(std::string(unparsed()), std::nullopt); }

  // The request crosses as bytes again, its body as read (no longer chunked, and with no
  // 100-continue to ask for), and ahead of whatever the caller sent after it.
  void park_request(const Request& head, const std::string& body, std::optional<CarriedCall> call) {
    Request copy(head.base());
    copy.body() = body;
    copy.erase(http::field::expect);
    copy.prepare_payload();
    std::ostringstream text;
    text << copy;
    std::string bytes = text.str();
    const auto after = buffer_.cdata();
    bytes.append(static_cast<const char*>(after.data()), after.size());
    park_socket(std::move(bytes), call);
  }

  // The call waits for its reply in the next process: nothing of its response is being
  // written now, and no reply comes here any more.
  void park_call() {
    std::optional<CarriedCall> call = forwarded_;
    if (call) call->streaming = events_.has_value();
    // The route's hang-up is never called: the call is not over, it crosses.
    hang_up_ = nullptr;
    pending_ = false;
    park_request(parser_->get(), request_.body, call);
  }

  void park_socket(std::string bytes, std::optional<CarriedCall> call) {
    stage_ = Stage::kDone;
    request_deadline_.cancel();
    if (events_) events_->stop();
    beast::error_code ignored;
    stream_.socket().cancel(ignored);
    base::UniqueFd socket(stream_.socket().release(ignored));
    if (!socket.valid()) return close();
    place_.report_parked(std::move(socket), std::move(bytes), call);
  }

  // Where the connection stands, for a switch: between requests, reading one, waiting for
  // its answer, writing it, refusing, or done.
  enum class Stage { kIdle, kRequest, kPending, kWriting, kLingering, kDone };

  beast::tcp_stream stream_;
  const HttpServices& services_;
  ConnectionPlace place_;
  Stage stage_ = Stage::kRequest;
  net::steady_timer request_deadline_;
  net::steady_timer lingering_deadline_;
  bool request_timed_out_ = false;
  std::string socket_address_;
  beast::flat_buffer buffer_;
  std::optional<RequestParser> parser_;
  HttpRequest request_;                 // the one being answered, kept whole for a switch to carry
  std::optional<CarriedCall> carried_;  // for the first request of a carried connection
  std::optional<CarriedCall> forwarded_;  // the call the request became, if it did
  std::shared_ptr<void> unheard_;         // until the carried request has been routed
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

void take_up_connection(tcp::socket socket, const HttpServices& services,
                        std::shared_ptr<OpenConnections> open, std::string bytes,
                        std::optional<CarriedCall> call, std::shared_ptr<void> unheard) {
  std::make_shared<Connection>(std::move(socket), services, std::move(open))
      ->resume(std::move(bytes), call, std::move(unheard));
}

}  // namespace sb::supervisor
