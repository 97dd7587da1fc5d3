#include "supervisor/pods/pod_dialer.hpp"

#include <fcntl.h>
#include <openssl/ssl.h>
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

#include "shared/http_proxy.hpp"
#include "shared/jsonrpc.hpp"
#include "shared/log.hpp"
#include "shared/proxy_tunnel.hpp"
#include "shared/secret_file.hpp"
#include "shared/tls_client.hpp"
#include "supervisor/audit/audit_log.hpp"
#include "supervisor/callers/client_table.hpp"
#include "supervisor/mcp/handler.hpp"
#include "supervisor/metrics/metrics.hpp"
#include "supervisor/pods/pod_socket.hpp"

namespace sb::supervisor {

using namespace pod;

namespace {

std::string code_text(const std::optional<int>& code) {
  return code ? std::to_string(*code) : "none";
}

std::string millis_text(milliseconds duration) {
  return std::to_string(duration.count()) + "ms";
}

}  // namespace

class PodDialers::Dialer final : public SocketOwner,
                                 public std::enable_shared_from_this<PodDialers::Dialer> {
 public:
  Dialer(net::io_context& io, const std::shared_ptr<const config::Config>& config,
         const McpServices& services, const std::shared_ptr<Tracer>& tracer,
         const config::Pod& attach, const PodTimings& timings, const ProxyEnvironment& environment)
      : io_(io),
        config_(config),
        services_(services),
        tracer_(tracer),
        timings_(timings),
        environment_(environment),
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
    const auto& attaches = config_->pods;
    const auto found = std::find_if(attaches.begin(), attaches.end(),
                                    [&](const config::Pod& a) { return a.name == name_; });
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
    return CallerContext{.caller = caller.name,
                         .computer = caller.default_computer,
                         .tools = config::granted(caller.grant.tools_for(caller.default_computer)),
                         .caller_cap = caller.caller_cap,
                         .wildcard = caller.wildcard()};
  }

  const McpServices& services() const override { return services_; }
  std::shared_ptr<const config::Config> config() const override { return config_; }
  std::shared_ptr<Tracer> tracer() const override { return tracer_; }

  const PodTimings& timings() const override { return timings_; }

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

  // The proxy this dial goes through, as the block says now (a reload may change it),
  // with its credentials read now; nothing for a direct dial. `problem` when it cannot be
  // used.
  std::optional<ProxyHop> proxy_hop_now(std::string& problem) {
    refresh_policy();
    const std::string& proxy = policy_.proxy;
    if (proxy.empty()) return std::nullopt;
    const bool from_environment = proxy == config::kProxyFromEnvironment;
    auto route = route_for(target_, from_environment ? "" : proxy,
                           from_environment ? environment_ : ProxyEnvironment{},
                           policy_.proxy_credentials_file);
    if (auto* why = std::get_if<std::string>(&route)) {
      problem = std::move(*why);
      return std::nullopt;
    }
    const auto& chosen = std::get<std::optional<ProxyRoute>>(route);
    return chosen ? sb::proxy_hop(*chosen, problem) : std::nullopt;
  }

  net::awaitable<AttemptOutcome> attempt() {
    std::string error;
    const std::optional<std::string> read = read_secret(secret_file_, error);
    if (!read) co_return fail(std::move(error));
    const std::string& secret = *read;
    const std::optional<ProxyHop> hop = proxy_hop_now(error);
    if (!error.empty()) co_return fail(std::move(error));
    // Through a proxy, the TCP connection is the proxy's, and a tunnel in it the pod's.
    const DialTarget& first = hop ? hop->proxy : target_;

    tcp::resolver resolver(io_);
    auto [resolve_error, endpoints] =
        co_await resolver.async_resolve(first.host, first.port, kAwait);
    if (stopping_) co_return AttemptOutcome::failed();
    if (resolve_error) co_return fail("resolving " + first.host + ": " + resolve_error.message());

    std::shared_ptr<ssl::context> tls;
    if (target_.tls || (hop && hop->proxy.tls)) {
      try {
        tls = make_tls_context();
      } catch (const std::exception& failure) {
        co_return fail(std::string("setting up TLS: ") + failure.what());
      }
    }
    const auto self = shared_from_this();
    if (target_.tls) {
      auto link = std::make_shared<SocketOver<TlsWs>>(io_, self, tls, io_.get_executor(), *tls);
      co_return co_await dial(link, endpoints, hop, secret);
    }
    auto link = std::make_shared<SocketOver<PlainWs>>(io_, self, tls, io_.get_executor());
    co_return co_await dial(link, endpoints, hop, secret);
  }

  template <typename Link>
  net::awaitable<AttemptOutcome> dial(std::shared_ptr<Link> link,
                                      const tcp::resolver::results_type& endpoints,
                                      const std::optional<ProxyHop>& hop,
                                      const std::string& secret) {
    const DialTarget& target = target_;
    current_ = link;
    auto& ws = link->ws();
    auto& lowest = beast::get_lowest_layer(ws);
    lowest.expires_after(timings_.connect_timeout);
    auto [connect_error, endpoint] = co_await lowest.async_connect(endpoints, kAwait);
    if (stopping_) co_return AttemptOutcome::failed();
    const DialTarget& first = hop ? hop->proxy : target;
    if (connect_error)
      co_return fail("connecting to " + first.host_header + ": " + connect_error.message());
    beast::error_code ignored;
    lowest.socket().set_option(tcp::no_delay(true), ignored);
    if (hop) {
      auto problem = co_await open_proxy_tunnel(tunnel_of(ws), *hop, target, link->tls(),
                                                timings_.handshake_timeout);
      if (stopping_) co_return AttemptOutcome::failed();
      if (!problem.empty()) co_return fail(std::move(problem));
    }

    lowest.expires_after(timings_.handshake_timeout);
    if constexpr (Link::kTls) {
      SSL* handle = ws.next_layer().native_handle();
      if (auto problem = prepare_tls(handle, target.host); !problem.empty())
        co_return fail(std::move(problem));
      auto [tls_error] = co_await ws.next_layer().async_handshake(ssl::stream_base::client, kAwait);
      if (stopping_) co_return AttemptOutcome::failed();
      if (tls_error) co_return fail(tls_failure(handle, target.host_header, tls_error));
    }
    // The WebSocket stream keeps its own handshake timeout; liveness is ours
    // (docs/protocol.md, "Pod sockets").
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
    services_.metrics.pod_dial(name_, "connected");
    services_.audit.write("pty_attach", {{"attach", name_}, {"computer", computer}});
    log_info("lent a computer to an openab-pty session",
             {{"attach", name_}, {"computer", computer}});
    const std::optional<int> code = co_await link->run();
    services_.audit.write("pty_detach", {{"attach", name_},
                                         {"computer", current_computer()},
                                         {"code", code ? json(*code) : json(nullptr)}});
    co_return AttemptOutcome::closed(code, milliseconds(0));
  }

  void report(const AttemptOutcome& outcome, const RedialDecision& decision, milliseconds wait) {
    // A dial that connected was counted when it did.
    if (outcome.kind != AttemptOutcome::Kind::kClosed) {
      services_.metrics.pod_dial(name_, outcome.kind == AttemptOutcome::Kind::kFailed ? "failed"
                                        : decision.credential_refusal ? "unauthorized"
                                                                      : "refused");
    }
    switch (outcome.kind) {
      case AttemptOutcome::Kind::kClosed:
        if (decision.stop) {
          services_.audit.write("pty_attach_stopped",
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
          services_.audit.write("pty_attach_refused",
                                {{"attach", name_}, {"status", outcome.status}});
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
  const std::shared_ptr<const config::Config>& config_;  // as of now: a reload swaps it
  const McpServices& services_;
  const std::shared_ptr<Tracer>& tracer_;
  PodTimings timings_;
  const ProxyEnvironment environment_;  // the service's, for proxy = "environment"
  std::string name_;
  std::string url_;                    // fixed at start: a reload cannot move the socket
  DialTarget target_;                  // parsed from it by the config loader
  std::filesystem::path secret_file_;  // fixed at start; read on every dial
  config::Pod policy_;                 // the block as last seen
  net::steady_timer backoff_timer_;
  std::mt19937 random_;
  std::weak_ptr<Socket> current_;
  std::string failure_;
  bool stopping_ = false;
};

PodDialers::PodDialers(boost::asio::io_context& io,
                       const std::shared_ptr<const config::Config>& config,
                       const McpServices& services, const std::shared_ptr<Tracer>& tracer,
                       PodTimings timings, ProxyEnvironment environment)
    : io_(io),
      config_(config),
      services_(services),
      tracer_(tracer),
      timings_(timings),
      environment_(std::move(environment)) {}

PodDialers::~PodDialers() = default;

void PodDialers::start() {
  for (const auto& attach : config_->pods) {
    auto dialer =
        std::make_shared<Dialer>(io_, config_, services_, tracer_, attach, timings_, environment_);
    dialers_.push_back(dialer);
    dialer->start();
  }
}

void PodDialers::reloaded() {
  for (const auto& dialer : dialers_) dialer->refresh_policy();
}

void PodDialers::stop() {
  for (const auto& dialer : dialers_) dialer->stop();
}

}  // namespace sb::supervisor
