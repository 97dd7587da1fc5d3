// switchboard-demo-computer: a small computer that dials out to a switchboard.
//
// A computer behind NAT cannot be called, so it calls: it opens one WebSocket to the
// switchboard's `GET /vm/attach` with `Authorization: Bearer <secret>`, and then serves MCP
// JSON-RPC on that socket, one message per text frame. The switchboard is the MCP client;
// this program is the MCP server. It follows docs/protocol.md, "Daemons":
//
//   - the secret (file or environment) is read again before every dial;
//   - 401 means only an operator can help: wait 300 s, leave the backoff alone;
//   - close 4002 (a newer daemon attached with the same secret) and 4003 (the secret was
//     rotated or revoked) mean stop for good: two daemons must never fight over one slot;
//   - anything else: redial after 1 s doubling to 60 s, ±20 % jitter, reset once an
//     attempt has lasted 60 s;
//   - WebSocket ping every 20 s; 60 s without hearing anything means the link is dead;
//     messages up to 16 MiB.
//
// It offers three harmless tools: `sys_info` (the shape OpenAB Connect reads), `echo` and
// `clock`. Plain ws:// only: run it beside the switchboard, not across a network.
//
// Layout: (1) the MCP server — pure functions from a request to its reply (demo_mcp.*); (2)
// the command line and the secret (demo_options.*); (3) Session — one attached WebSocket
// (demo_session.*); (4) Daemon — the dial loop, here; (5) the same server on stdio, for
// switchboard-connect (demo_stdio.*).
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <exception>
#include <iostream>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <string_view>
#include <utility>

#include "examples/demo_computer.hpp"
#include "examples/demo_mcp.hpp"
#include "examples/demo_options.hpp"
#include "examples/demo_session.hpp"
#include "examples/demo_stdio.hpp"
#include "shared/backoff.hpp"

namespace demo {

void log_line(const std::string& message) {
  static std::mutex mutex;
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char stamp[16];
  std::strftime(stamp, sizeof stamp, "%H:%M:%S", &local);
  const std::lock_guard lock(mutex);
  std::cerr << stamp << ' ' << message << std::endl;
}

namespace {

constexpr std::string_view kUsage =
    R"(switchboard-demo-computer — a demo computer that dials out to a switchboard

Usage:
  switchboard-demo-computer --url ws://HOST:PORT/vm/attach --secret-file FILE
  switchboard-demo-computer --stdio
  switchboard-demo-computer --help | --version

  --url URL           the switchboard's attach URL (plain ws:// only)      env SB_URL
  --secret-file FILE  file holding this computer's secret (from            env SB_SECRET_FILE
                      `switchboard gen-secret`); re-read before every dial
  The secret may instead be given in env SB_SECRET (used only when no secret file is set).
  --stdio             no dial: serve MCP on stdin and stdout, one message per line, for
                      switchboard-connect to run

Tools offered: sys_info, echo, clock. Exits on close 4002 (replaced by a newer attach)
or 4003 (secret rotated or revoked); redials with backoff on anything else.
)";

std::string seconds_text(Clock::duration duration) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1fs", std::chrono::duration<double>(duration).count());
  return text;
}

// ---------------------------------------------------------------------------------------
// (4) Daemon: dial, serve, decide, sleep, repeat.

class Daemon {
 public:
  Daemon(net::io_context& io, Options options)
      : io_(io), options_(std::move(options)), sleep_timer_(io) {}

  // Returns the exit code: 0 when told to stop (close 4002/4003 or a signal).
  net::awaitable<int> run() {
    if (!options_.endpoint.loopback)
      log_line("warning: " + options_.url +
               " is not loopback; plain ws:// sends the secret in clear on that network");
    sb::Backoff backoff(kFirstBackoff, kMaxBackoff, kStableAttempt);
    while (!stopping_) {
      const auto started = Clock::now();
      std::string why_redial;  // the first half of this attempt's last log line

      std::string secret;
      try {
        secret = read_secret(options_);
      } catch (const std::exception& error) {
        why_redial = std::string("dial failed: ") + error.what();
      }

      if (!secret.empty()) {
        log_line("dialling " + options_.url);
        auto session = std::make_shared<Session>(io_.get_executor(), tool_pool_);
        current_ = session;
        const DialResult dial = co_await session->dial(options_.endpoint, secret);
        if (stopping_) break;
        if (dial.outcome == DialOutcome::kUnauthorized) {
          // Only an operator can fix a wrong secret: try again rarely, backoff untouched.
          log_line("401: wrong secret; retrying in 300 s");
          co_await sleep(kUnauthorizedWait);
          continue;
        }
        if (dial.outcome == DialOutcome::kFailed) {
          why_redial = "dial failed: " + dial.detail;
        } else {
          log_line("attached " + options_.url + " tools: " + tool_names());
          const SessionEnd end = co_await session->serve();
          if (stopping_) break;
          const std::string closed = "code " + std::to_string(end.code) +
                                     (end.reason.empty() ? "" : " (" + end.reason + ")");
          if (end.code == kCloseReplaced || end.code == kCloseRevoked) {
            log_line("closed with " + closed + " — stopping: " +
                     (end.code == kCloseReplaced
                          ? "a newer daemon attached with this secret"
                          : "this secret is no longer accepted; restart once it is updated"));
            co_return 0;
          }
          why_redial = "detached, " + closed;
        }
      }

      const auto lasted =
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started);
      const Clock::duration delay = sb::jittered(backoff.next(lasted), unit_(random_));
      log_line(why_redial + " — redial in " + seconds_text(delay));
      co_await sleep(delay);
    }
    co_return 0;
  }

  // SIGINT/SIGTERM: say goodbye with close 1000 when attached, then run() returns.
  // Returns false when there is nothing to finish and the caller may stop at once.
  bool stop() {
    stopping_ = true;
    sleep_timer_.cancel();
    const auto session = current_.lock();
    if (!session || !session->attached()) return false;
    log_line("signal: closing with 1000 and exiting");
    session->close_normally();
    return true;
  }

 private:
  net::awaitable<void> sleep(Clock::duration duration) {
    sleep_timer_.expires_after(duration);
    co_await sleep_timer_.async_wait(kAwait);  // cancelled by stop()
  }

  net::io_context& io_;
  Options options_;
  net::thread_pool tool_pool_{kToolThreads};
  net::steady_timer sleep_timer_;
  std::weak_ptr<Session> current_;
  std::mt19937 random_{std::random_device{}()};
  std::uniform_real_distribution<double> unit_{0.0, 1.0};  // for the backoff's jitter
  bool stopping_ = false;
};

}  // namespace
}  // namespace demo

int main(int argc, char** argv) {
  using namespace demo;
  Options options;
  try {
    options = parse_options(argc, argv);
  } catch (const UsageError& error) {
    std::cerr << "error: " << error.what() << "\n\n" << kUsage;
    return 2;
  }
  if (options.help) {
    std::cout << kUsage;
    return 0;
  }
  if (options.version) {
    std::cout << kProgram << ' ' << kVersion << '\n';
    return 0;
  }
  if (options.stdio) return serve_stdio();

  net::io_context io;
  Daemon daemon(io, std::move(options));
  int exit_code = 0;

  net::signal_set signals(io, SIGINT, SIGTERM);
  net::steady_timer give_up(io);
  signals.async_wait([&](beast::error_code error, int) {
    if (error) return;
    if (!daemon.stop()) {
      io.stop();  // nothing to finish: a dial or a sleep
      return;
    }
    // Leave the close handshake a moment, not forever.
    give_up.expires_after(3s);
    give_up.async_wait([&](beast::error_code) { io.stop(); });
  });

  net::co_spawn(io, daemon.run(), [&](std::exception_ptr failure, int code) {
    exit_code = code;
    if (failure) {
      try {
        std::rethrow_exception(failure);
      } catch (const std::exception& error) {
        log_line(std::string("fatal: ") + error.what());
      }
      exit_code = 1;
    }
    io.stop();
  });
  io.run();
  return exit_code;
}
