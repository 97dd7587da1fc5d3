#include "connect/connector.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include "base/asio_names.hpp"
#include "shared/backoff.hpp"
#include "shared/log.hpp"
#include "shared/secret_file.hpp"

namespace sb::connect {
namespace {

using namespace sb::asio_names;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr std::uint16_t kCloseReplaced = 4002;
constexpr std::uint16_t kCloseRevoked = 4003;
constexpr std::uint16_t kCloseServerGone = 1011;
constexpr milliseconds kStableAttempt{60'000};  // an attach this long resets the backoff

std::string seconds_text(milliseconds duration) {
  const long long tenths = (duration.count() + 50) / 100;
  return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) + " s";
}

std::string close_text(const LinkEnd& end) {
  std::string text = "code " + std::to_string(end.code);
  if (!end.reason.empty()) text.append(" (").append(end.reason).append(")");
  return text;
}

}  // namespace

Connector::Connector(net::io_context& io, Options options, std::shared_ptr<ssl::context> tls,
                     Timings timings)
    : io_(io),
      options_(std::move(options)),
      tls_(std::move(tls)),
      timings_(timings),
      sleep_timer_(io),
      relay_done_(io) {}

net::awaitable<int> Connector::run() {
  Backoff backoff(timings_.dial_backoff, timings_.dial_backoff * 60, kStableAttempt);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  int exit_code = kExitStopped;
  while (!stopping_) {
    const auto started = Clock::now();
    std::string why_redial;
    std::string secret;
    if (std::string problem = co_await fresh_server(); !problem.empty()) {
      why_redial = "the MCP server did not start: " + problem;
    } else if (std::string problem = read_secret(secret); !problem.empty()) {
      why_redial = std::move(problem);
    } else {
      log_info("dialling the switchboard", {{"computer", options_.name}, {"url", options_.url}});
      link_ = make_link(io_.get_executor(), options_.target, tls_,
                        LinkTimings{timings_.dial_ping, timings_.dial_silence},
                        std::string("switchboard-connect/") + SWITCHBOARD_VERSION);
      const DialResult dial = co_await link_->dial(secret);
      if (stopping_) break;
      if (dial.outcome == DialOutcome::kUnauthorized) {
        // Only an operator can fix a refused secret: ask again rarely, backoff untouched.
        link_.reset();
        log_warn(
            "the switchboard refused the secret (401); asking again later",
            {{"computer", options_.name}, {"retry_in", seconds_text(timings_.dial_unauthorized)}});
        co_await sleep(timings_.dial_unauthorized);
        continue;
      }
      if (dial.outcome == DialOutcome::kFailed) {
        why_redial = "dial failed: " + dial.detail;
      } else {
        log_info("attached", {{"computer", options_.name}, {"url", options_.url}});
        const LinkEnd end = co_await relay(link_);
        link_.reset();
        if (stopping_) break;
        if (end.code == kCloseReplaced || end.code == kCloseRevoked) {
          log_error(end.code == kCloseReplaced
                        ? "a newer attach with this secret replaced this one; stopping"
                        : "the switchboard no longer accepts this secret; stopping until "
                          "an operator updates it",
                    {{"computer", options_.name}, {"close", close_text(end)}});
          exit_code = end.code == kCloseReplaced ? kExitReplaced : kExitRevoked;
          break;
        }
        why_redial = "detached, " + close_text(end);
      }
    }
    const auto lasted = std::chrono::duration_cast<milliseconds>(Clock::now() - started);
    const milliseconds delay = jittered(backoff.next(lasted), unit(random_));
    log_info(why_redial, {{"computer", options_.name}, {"retry_in", seconds_text(delay)}});
    co_await sleep(delay);
  }
  if (server_) co_await server_->stop(timings_.server_grace);
  co_return exit_code;
}

void Connector::stop() {
  stopping_ = true;
  sleep_timer_.cancel();
  if (link_) link_->close(1000, "switchboard-connect stopping");
}

// The server of the next attach: the current one if it is still untouched and running,
// else a new one. What failed, or "".
net::awaitable<std::string> Connector::fresh_server() {
  if (server_ && !server_->used() && !server_->ended()) co_return "";
  if (server_) {
    co_await server_->stop(timings_.server_grace);
    server_.reset();
  }
  if (options_.upstream) {
    server_ = std::make_unique<HttpUpstream>(io_, *options_.upstream, options_.name);
  } else {
    server_ = std::make_unique<StdioServer>(io_, options_.command, options_.name);
  }
  if (std::string problem = server_->start(); !problem.empty()) {
    server_.reset();
    co_return problem;
  }
  co_return "";
}

// Read before every dial, so that a replaced file takes effect at the next attempt.
std::string Connector::read_secret(std::string& secret) const {
  std::string error;
  std::optional<std::string> read = sb::read_secret(options_.secret_file, error);
  if (!read) return error;
  if (read->empty()) return "secret_file " + options_.secret_file.string() + " is empty";
  secret = std::move(*read);
  return "";
}

// Relays until the attach ends: the switchboard's messages to the server here, the
// server's to the switchboard in relay_replies(). Then the server is stopped: it has been
// talked to.
net::awaitable<LinkEnd> Connector::relay(std::shared_ptr<Link> link) {
  relay_done_.expires_at(net::steady_timer::time_point::max());
  replies_running_ = true;  // before it runs: co_spawn starts it later
  net::co_spawn(io_, relay_replies(link), net::detached);
  while (const auto message = co_await link->read()) {
    if (!co_await server_->write(*message))
      link->close(kCloseServerGone, "the MCP server stopped reading");
  }
  co_await server_->stop(timings_.server_grace);
  if (replies_running_) co_await relay_done_.async_wait(kAwait);
  co_return link->end();
}

net::awaitable<void> Connector::relay_replies(std::shared_ptr<Link> link) {
  while (const auto message = co_await server_->read()) {
    if (!co_await link->write(*message)) break;
  }
  // The server's output ended (it exited, or we stopped it): so does the attach.
  link->close(kCloseServerGone, "the MCP server exited");
  replies_running_ = false;
  relay_done_.cancel();
}

net::awaitable<void> Connector::sleep(milliseconds duration) {
  sleep_timer_.expires_after(duration);
  co_await sleep_timer_.async_wait(kAwait);  // cancelled by stop()
}

}  // namespace sb::connect
