#include "supervisor/pty_dialer.hpp"

#include <fcntl.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <cerrno>
#include <cstring>
#include <deque>
#include <map>
#include <random>

#include "shared/jsonrpc.hpp"
#include "shared/log.hpp"
#include "shared/text.hpp"
#include "supervisor/client_table.hpp"
#include "supervisor/northbound_mcp.hpp"

namespace sb::supervisor {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
namespace net = boost::asio;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// An awaited operation yields its error code instead of throwing.
constexpr auto kAwait = net::as_tuple(net::use_awaitable);

constexpr std::size_t kMaxInboundBytes = 4 * 1024 * 1024;  // one message from the pod
constexpr std::size_t kOutboundQueue = 64;                 // messages waiting to be sent
constexpr std::size_t kMaxSecretFileBytes = 64 * 1024;     // ours: a secret is 64 hex chars
constexpr std::string_view kBusyMessage = "too many requests in flight on this attach";

using PlainWs = websocket::stream<beast::tcp_stream>;
using TlsWs = websocket::stream<beast::ssl_stream<beast::tcp_stream>>;

// The whole file, or the reason it cannot be read (the path and the OS error; never the
// content).
bool read_secret_file(const std::filesystem::path& path, std::string& text, std::string& error) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = "cannot read secret_file " + path.string() + ": " + std::strerror(errno);
    return false;
  }
  char chunk[4096];
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error = "cannot read secret_file " + path.string() + ": " + std::strerror(errno);
      ::close(fd);
      return false;
    }
    if (n == 0) break;
    text.append(chunk, static_cast<std::size_t>(n));
    if (text.size() > kMaxSecretFileBytes) {
      error = "secret_file " + path.string() + " is larger than 64 KiB; it should hold one secret";
      ::close(fd);
      return false;
    }
  }
  ::close(fd);
  return true;
}

std::string code_text(const std::optional<int>& code) {
  return code ? std::to_string(*code) : "none";
}

std::string millis_text(milliseconds duration) {
  return std::to_string(duration.count()) + "ms";
}

// A client TLS context: TLS 1.2 or newer, the peer verified against OpenSSL's default
// verify paths (honouring SSL_CERT_FILE / SSL_CERT_DIR). Throws on failure.
std::shared_ptr<ssl::context> make_tls_context() {
  auto context = std::make_shared<ssl::context>(ssl::context::tls_client);
  context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                       ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
  SSL_CTX_set_min_proto_version(context->native_handle(), TLS1_2_VERSION);
  context->set_default_verify_paths();
  context->set_verify_mode(ssl::verify_peer);
  return context;
}

// SNI and the name (or address) the certificate must carry. Returns a problem, or "".
std::string prepare_tls(SSL* handle, const std::string& host) {
  boost::system::error_code not_an_address;
  net::ip::make_address(host, not_an_address);
  if (!not_an_address) {
    // An IP literal: no SNI (RFC 6066), and the certificate must list the address.
    if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(handle), host.c_str()) != 1)
      return "cannot check the certificate against " + host;
    return "";
  }
  if (SSL_set_tlsext_host_name(handle, host.c_str()) != 1)
    return "cannot send the server name " + host;
  if (SSL_set1_host(handle, host.c_str()) != 1)
    return "cannot check the certificate against " + host;
  return "";
}

// What a session needs from its dialer.
class SessionOwner {
 public:
  virtual ~SessionOwner() = default;
  // The attach's policy as of now, for one request.
  virtual CallerContext request_context() = 0;
  virtual McpServices services() const = 0;
  virtual const PtyTimings& timings() const = 0;
};

// One upgraded pod socket, independent of its transport: the pod's requests, the 64-permit
// ceiling, the outbound queue and the keepalive. PodLink<Ws> adds the I/O.
class PodSession : public std::enable_shared_from_this<PodSession> {
 public:
  PodSession(net::io_context& io, std::shared_ptr<SessionOwner> owner)
      : owner_(std::move(owner)), ping_timer_(io) {}
  virtual ~PodSession() = default;
  PodSession(const PodSession&) = delete;
  PodSession& operator=(const PodSession&) = delete;

  // Ends the session once: the transport is dropped (no close frame), the keepalive stops,
  // and every request still in progress is abandoned (its share given back at once).
  void end() {
    if (ended_) return;
    ended_ = true;
    ping_timer_.cancel();
    close_transport();
    auto pending = std::move(pending_);
    pending_.clear();
    waiting_.clear();
    for (auto& [key, abandon] : pending) {
      if (abandon) abandon();
    }
  }

 protected:
  struct Outbound {
    bool ping = false;
    ReplyText text;
  };

  virtual void write_front() = 0;  // starts sending queue_.front()
  virtual void close_transport() = 0;

  void heard() { last_heard_ = Clock::now(); }

  // One message from the pod: a request or notification (an object with a `method`
  // member), or its answer to a request the computer routed to it (an object with an `id`
  // and a `result` or `error`); anything else (arrays, scalars, non-JSON) is ignored.
  void on_message(const std::string& text) {
    if (ended_ || !jsonrpc::nesting_within(text, jsonrpc::kMaxNesting)) return;
    const json message = json::parse(text, nullptr, false);
    if (!message.is_object()) return;
    const bool answer =
        message.contains("id") && (message.contains("result") || message.contains("error"));
    if (!message.contains("method") && !answer) return;
    const auto id = message.find("id");
    if (in_progress_ >= kMaxConcurrentPodRequests) {
      if (id != message.end() && queue_.size() < kOutboundQueue) {
        const auto busy = jsonrpc::error_response(*id, jsonrpc::kOverloaded, kBusyMessage);
        queue_.push_back(
            {false, {.body = busy.dump(-1, ' ', false, json::error_handler_t::replace)}});
        pump();
      }
      return;
    }
    ++in_progress_;
    const std::uint64_t key = next_key_++;
    pending_.emplace(key, Abandon{});
    CallerContext context = owner_->request_context();
    context.session = session_;
    const McpServices services = owner_->services();
    Abandon abandon = handle_mcp(
        message, context, services,
        [weak = weak_from_this(), key](std::optional<ReplyText> reply) {
          if (auto self = weak.lock()) self->completed(key, std::move(reply));
        },
        [weak = weak_from_this()](ReplyText text) {
          if (auto self = weak.lock()) self->relay(std::move(text));
        });
    // `done` may already have run, in which case the entry is gone.
    if (const auto found = pending_.find(key); found != pending_.end())
      found->second = std::move(abandon);
  }

  // Every 20 s: end the session if the pod has been silent past the idle limit, else ping
  // (skipped when the queue is full).
  void schedule_ping() {
    ping_timer_.expires_after(owner_->timings().ping_interval);
    ping_timer_.async_wait([weak = weak_from_this()](const boost::system::error_code& error) {
      auto self = weak.lock();
      if (error || !self || self->ended_) return;
      if (Clock::now() - self->last_heard_ > self->owner_->timings().idle_limit) {
        self->end();
        return;
      }
      if (self->queue_.size() < kOutboundQueue) {
        self->queue_.push_back({true, {}});
        self->pump();
      }
      self->schedule_ping();
    });
  }

  void pump() {
    if (writing_ || ended_ || queue_.empty()) return;
    writing_ = true;
    write_front();
  }

  // The write of queue_.front() finished.
  void wrote(const beast::error_code& error) {
    writing_ = false;
    if (ended_) return;
    if (error) return end();
    queue_.pop_front();
    promote_waiting();
    pump();
  }

  std::deque<Outbound> queue_;
  bool ended_ = false;

 private:
  // A reply for request `key` is ready (or there is none). Its permit is held until the
  // reply fits in the outbound queue.
  void completed(std::uint64_t key, std::optional<ReplyText> reply) {
    if (pending_.erase(key) == 0 || ended_) return;
    if (!reply) {
      --in_progress_;
      return;
    }
    waiting_.push_back(std::move(*reply));
    promote_waiting();
    pump();
  }

  // A message from the computer during one of the pod's calls. A pod far behind on reading
  // loses progress rather than growing the queue.
  void relay(ReplyText text) {
    if (ended_ || queue_.size() >= kOutboundQueue) return;
    queue_.push_back({false, std::move(text)});
    pump();
  }

  void promote_waiting() {
    while (!waiting_.empty() && queue_.size() < kOutboundQueue) {
      queue_.push_back({false, std::move(waiting_.front())});
      waiting_.pop_front();
      --in_progress_;
    }
  }

  std::shared_ptr<SessionOwner> owner_;
  // Scopes the pod's cancellations and answers to this socket's own calls: a session
  // ends with its socket, and with it every call it could name.
  const std::string session_ =
      "pod-socket-" + std::to_string(reinterpret_cast<std::uintptr_t>(this));
  net::steady_timer ping_timer_;
  Clock::time_point last_heard_ = Clock::now();
  bool writing_ = false;
  int in_progress_ = 0;  // permits taken
  std::uint64_t next_key_ = 1;
  std::map<std::uint64_t, Abandon> pending_;  // requests being processed
  std::deque<ReplyText> waiting_;             // replies waiting for room in the queue
};

template <typename Ws>
class PodLink final : public PodSession {
 public:
  static constexpr bool kTls = std::is_same_v<Ws, TlsWs>;

  template <typename... StreamArgs>
  PodLink(net::io_context& io, std::shared_ptr<SessionOwner> owner,
          std::shared_ptr<ssl::context> tls, StreamArgs&&... stream_args)
      : PodSession(io, std::move(owner)),
        tls_(std::move(tls)),
        ws_(std::forward<StreamArgs>(stream_args)...) {}

  Ws& ws() { return ws_; }

  // Serves the upgraded socket until it ends; returns the pod's close code, or nothing for
  // a drop (read error, end of stream, oversized message, idle, or end()).
  net::awaitable<std::optional<int>> run() {
    const auto self = std::static_pointer_cast<PodLink>(shared_from_this());
    ws_.control_callback([this](websocket::frame_type, beast::string_view) { heard(); });
    heard();
    schedule_ping();
    while (!ended_) {
      auto [error, bytes] = co_await ws_.async_read(buffer_, kAwait);
      if (error) break;
      heard();
      const std::string text = beast::buffers_to_string(buffer_.data());
      buffer_.consume(buffer_.size());
      on_message(text);
    }
    std::optional<int> code;
    if (const auto& reason = ws_.reason(); reason.code != websocket::close_code::none)
      code = reason.code;
    end();
    ws_.control_callback();
    co_return code;
  }

 private:
  void write_front() override {
    auto self = std::static_pointer_cast<PodLink>(shared_from_this());
    if (queue_.front().ping) {
      ws_.async_ping({}, [self](const beast::error_code& error) { self->wrote(error); });
      return;
    }
    ws_.text(true);
    const auto& text = queue_.front().text;
    ws_.async_write(std::array{net::buffer(text.head), net::buffer(text.body)},
                    [self](const beast::error_code& error, std::size_t) { self->wrote(error); });
  }

  void close_transport() override {
    beast::error_code ignored;
    beast::get_lowest_layer(ws_).socket().shutdown(tcp::socket::shutdown_both, ignored);
    beast::get_lowest_layer(ws_).close();
  }

  std::shared_ptr<ssl::context> tls_;  // outlives the stream that uses it
  Ws ws_;
  beast::flat_buffer buffer_;
};

}  // namespace

bool valid_header_value(std::string_view value) {
  return std::none_of(value.begin(), value.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return (byte < 0x20 && byte != '\t') || byte == 0x7f;
  });
}

// One [[pty_attach]] block: its dial loop and its policy.
class PtyDialers::Dialer final : public SessionOwner,
                                 public std::enable_shared_from_this<PtyDialers::Dialer> {
 public:
  Dialer(net::io_context& io, SupervisorState& state, const config::PtyAttach& attach,
         const PtyTimings& timings)
      : io_(io),
        state_(state),
        timings_(timings),
        name_(attach.name),
        url_(attach.url),
        target_(attach.target),
        secret_file_(attach.secret_file),
        policy_(attach),
        backoff_timer_(io),
        random_(seed()) {}

  void start() {
    net::co_spawn(io_, run(shared_from_this()), [name = name_](std::exception_ptr failure) {
      if (!failure) return;
      try {
        std::rethrow_exception(failure);
      } catch (const std::exception& error) {
        log_error("pty attach dialer failed; not dialling until a restart",
                  {{"attach", name}, {"error", error.what()}});
      }
    });
  }

  void stop() {
    stopping_ = true;
    backoff_timer_.cancel();
    if (const auto link = current_.lock()) link->end();
  }

  // Reads this attach's block from the current config. A block that a reload removed
  // keeps its last policy (the reload has warned that it keeps dialling).
  void refresh_policy() {
    const auto& attaches = state_.config->pty_attaches;
    const auto found = std::find_if(attaches.begin(), attaches.end(),
                                    [&](const config::PtyAttach& a) { return a.name == name_; });
    if (found == attaches.end()) return;
    if (found->computer != policy_.computer) {
      log_info("pty attach now lends another computer",
               {{"attach", name_}, {"from", policy_.computer}, {"to", found->computer}});
    }
    policy_ = *found;
  }

  CallerContext request_context() override {
    refresh_policy();
    const Caller caller = caller_from(policy_);
    const config::ToolList* tools = caller.grant.tools_for(caller.default_computer);
    return CallerContext{.caller = caller.name,
                         .computer = caller.default_computer,
                         .tools = tools ? *tools : config::ToolList{},
                         .caller_cap = caller.caller_cap,
                         .wildcard = caller.wildcard()};
  }

  McpServices services() const override {
    return McpServices{state_.workers, state_.audit,   state_.calls,
                       state_.tasks,   state_.replies, state_.config};
  }

  const PtyTimings& timings() const override { return timings_; }

 private:
  static std::mt19937::result_type seed() {
    try {
      return std::random_device{}();
    } catch (...) {
      return static_cast<std::mt19937::result_type>(Clock::now().time_since_epoch().count());
    }
  }

  std::string current_computer() {
    refresh_policy();
    return policy_.computer;
  }

  net::awaitable<void> run(std::shared_ptr<Dialer> self) {
    RedialPolicy policy(timings_);
    while (!stopping_) {
      const auto started = Clock::now();
      failure_.clear();
      AttemptOutcome outcome = co_await attempt();
      current_.reset();
      outcome.lasted = std::chrono::duration_cast<milliseconds>(Clock::now() - started);
      if (stopping_) break;
      const RedialDecision decision = policy.next(outcome);
      const milliseconds wait =
          jittered(decision.wait, std::uniform_real_distribution<double>(0.0, 1.0)(random_));
      report(outcome, decision, wait);
      if (decision.stop) break;
      backoff_timer_.expires_after(wait);
      co_await backoff_timer_.async_wait(kAwait);
    }
    (void)self;
  }

  AttemptOutcome fail(std::string why) {
    failure_ = std::move(why);
    return AttemptOutcome::failed();
  }

  net::awaitable<AttemptOutcome> attempt() {
    std::string text;
    std::string error;
    if (!read_secret_file(secret_file_, text, error)) co_return fail(std::move(error));
    const std::string secret(trim(text));
    if (!valid_header_value(secret)) {
      co_return fail("secret_file " + secret_file_.string() +
                     " holds characters invalid in a header");
    }
    const DialTarget& target = target_;

    tcp::resolver resolver(io_);
    auto [resolve_error, endpoints] =
        co_await resolver.async_resolve(target.host, target.port, kAwait);
    if (stopping_) co_return AttemptOutcome::failed();
    if (resolve_error) co_return fail("resolving " + target.host + ": " + resolve_error.message());

    const auto self = shared_from_this();
    if (target.tls) {
      std::shared_ptr<ssl::context> tls;
      try {
        tls = make_tls_context();
      } catch (const std::exception& failure) {
        co_return fail(std::string("setting up TLS: ") + failure.what());
      }
      auto link = std::make_shared<PodLink<TlsWs>>(io_, self, tls, io_, *tls);
      co_return co_await dial(link, target, endpoints, secret);
    }
    auto link = std::make_shared<PodLink<PlainWs>>(io_, self, nullptr, io_);
    co_return co_await dial(link, target, endpoints, secret);
  }

  template <typename Link>
  net::awaitable<AttemptOutcome> dial(std::shared_ptr<Link> link, const DialTarget& target,
                                      const tcp::resolver::results_type& endpoints,
                                      const std::string& secret) {
    current_ = link;
    auto& ws = link->ws();
    auto& lowest = beast::get_lowest_layer(ws);
    lowest.expires_after(timings_.connect_timeout);
    auto [connect_error, endpoint] = co_await lowest.async_connect(endpoints, kAwait);
    if (stopping_) co_return AttemptOutcome::failed();
    if (connect_error)
      co_return fail("connecting to " + target.host_header + ": " + connect_error.message());
    beast::error_code ignored;
    lowest.socket().set_option(tcp::no_delay(true), ignored);

    lowest.expires_after(timings_.handshake_timeout);
    if constexpr (Link::kTls) {
      SSL* handle = ws.next_layer().native_handle();
      if (auto problem = prepare_tls(handle, target.host); !problem.empty())
        co_return fail(std::move(problem));
      auto [tls_error] = co_await ws.next_layer().async_handshake(ssl::stream_base::client, kAwait);
      if (stopping_) co_return AttemptOutcome::failed();
      if (tls_error) {
        std::string why = "TLS with " + target.host_header + ": " + tls_error.message();
        if (const long verify = SSL_get_verify_result(handle); verify != X509_V_OK)
          why += std::string(" (") + X509_verify_cert_error_string(verify) + ")";
        co_return fail(std::move(why));
      }
    }
    // The WebSocket stream keeps its own handshake timeout; liveness is ours
    // (docs/protocol.md, "Pod sessions").
    lowest.expires_never();
    ws.set_option(websocket::stream_base::timeout{timings_.handshake_timeout,
                                                  websocket::stream_base::none(), false});
    ws.set_option(websocket::stream_base::decorator([secret](websocket::request_type& request) {
      request.erase(http::field::user_agent);
      request.set(http::field::authorization, "Bearer " + secret);
    }));
    ws.read_message_max(kMaxInboundBytes);
    websocket::response_type response;
    auto [upgrade_error] =
        co_await ws.async_handshake(response, target.host_header, target.target, kAwait);
    if (stopping_) co_return AttemptOutcome::failed();
    if (upgrade_error == websocket::error::upgrade_declined)
      co_return AttemptOutcome::refused(static_cast<int>(response.result_int()));
    if (upgrade_error)
      co_return fail("upgrading " + target.host_header + ": " + upgrade_error.message());

    const std::string computer = current_computer();
    state_.audit.write("pty_attach", {{"attach", name_}, {"computer", computer}});
    log_info("lent a computer to an openab-pty session",
             {{"attach", name_}, {"computer", computer}});
    const std::optional<int> code = co_await link->run();
    state_.audit.write("pty_detach", {{"attach", name_},
                                      {"computer", current_computer()},
                                      {"code", code ? json(*code) : json(nullptr)}});
    co_return AttemptOutcome::closed(code, milliseconds(0));
  }

  void report(const AttemptOutcome& outcome, const RedialDecision& decision, milliseconds wait) {
    switch (outcome.kind) {
      case AttemptOutcome::Kind::kClosed:
        if (decision.stop) {
          state_.audit.write("pty_attach_stopped",
                             {{"attach", name_}, {"code", *outcome.close_code}});
          log_info("the pod ended the pty attach; not redialling until a restart",
                   {{"attach", name_}, {"code", code_text(outcome.close_code)}});
        } else {
          log_info("pty attach closed; redialling", {{"attach", name_},
                                                     {"code", code_text(outcome.close_code)},
                                                     {"retry_in", millis_text(wait)}});
        }
        return;
      case AttemptOutcome::Kind::kRefused:
        if (decision.credential_refusal) {
          state_.audit.write("pty_attach_refused", {{"attach", name_}, {"status", outcome.status}});
          log_warn("pty attach refused; waiting for a fresh grant in secret_file",
                   {{"attach", name_},
                    {"status", std::to_string(outcome.status)},
                    {"retry_in", millis_text(wait)}});
        } else {
          log_warn("pty attach upgrade failed; redialling",
                   {{"attach", name_},
                    {"status", std::to_string(outcome.status)},
                    {"retry_in", millis_text(wait)}});
        }
        return;
      case AttemptOutcome::Kind::kFailed:
        log_warn("pty attach dial failed; redialling",
                 {{"attach", name_}, {"error", failure_}, {"retry_in", millis_text(wait)}});
        return;
    }
  }

  net::io_context& io_;
  SupervisorState& state_;
  PtyTimings timings_;
  std::string name_;
  std::string url_;                    // fixed at start: a reload cannot move the socket
  DialTarget target_;                  // parsed from it by the config loader
  std::filesystem::path secret_file_;  // fixed at start; read on every dial
  config::PtyAttach policy_;           // the block as last seen
  net::steady_timer backoff_timer_;
  std::mt19937 random_;
  std::weak_ptr<PodSession> current_;
  std::string failure_;
  bool stopping_ = false;
};

PtyDialers::PtyDialers(boost::asio::io_context& io, SupervisorState& state, PtyTimings timings)
    : io_(io), state_(state), timings_(timings) {}

PtyDialers::~PtyDialers() = default;

void PtyDialers::start() {
  for (const auto& attach : state_.config->pty_attaches) {
    auto dialer = std::make_shared<Dialer>(io_, state_, attach, timings_);
    dialers_.push_back(dialer);
    dialer->start();
  }
}

void PtyDialers::reloaded() {
  for (const auto& dialer : dialers_) dialer->refresh_policy();
}

void PtyDialers::stop() {
  for (const auto& dialer : dialers_) dialer->stop();
}

}  // namespace sb::supervisor
