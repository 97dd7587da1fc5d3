// switchboard-connect's loop (docs/connect.md): a fresh MCP server, the secret read again,
// a dial; while attached, every message relayed both ways as it is; then the decision.
// Close 4002 and 4003 stop for good (two daemons must never fight over one computer, and
// a revoked secret needs an operator); a 401 waits `dial_unauthorized`; anything else
// redials with the project's backoff. A server that has been talked to is stopped and a
// fresh one started before the next dial, because the switchboard initializes afresh
// after every attach; a server that exits while attached ends the attach (close 1011).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <memory>
#include <random>

#include "connect/http_upstream.hpp"
#include "connect/link.hpp"
#include "connect/mcp_server.hpp"
#include "connect/options.hpp"
#include "connect/stdio_server.hpp"
#include "shared/timings.hpp"

namespace sb::connect {

// How the program ends (the exit status).
enum ExitCode : int {
  kExitStopped = 0,  // a signal
  kExitFatal = 1,
  kExitUsage = 2,
  kExitReplaced = 3,  // close 4002: a newer attach with the same secret
  kExitRevoked = 4,   // close 4003: the secret is no longer accepted
};

class Connector {
 public:
  Connector(boost::asio::io_context& io, Options options,
            std::shared_ptr<boost::asio::ssl::context> tls, Timings timings);

  boost::asio::awaitable<int> run();
  // SIGTERM/SIGINT: close the attach with 1000, stop the server, and run() returns 0.
  void stop();

 private:
  boost::asio::awaitable<std::string> fresh_server();
  std::string read_secret(std::string& secret) const;
  boost::asio::awaitable<LinkEnd> relay(std::shared_ptr<Link> link);
  boost::asio::awaitable<void> relay_replies(std::shared_ptr<Link> link);
  boost::asio::awaitable<void> sleep(std::chrono::milliseconds duration);

  boost::asio::io_context& io_;
  Options options_;
  std::shared_ptr<boost::asio::ssl::context> tls_;
  Timings timings_;
  std::unique_ptr<McpServer> server_;
  std::shared_ptr<Link> link_;  // the current attach, if any
  boost::asio::steady_timer sleep_timer_;
  boost::asio::steady_timer relay_done_;  // cancelled when relay_replies() has ended
  bool replies_running_ = false;
  std::mt19937 random_{std::random_device{}()};
  bool stopping_ = false;
};

}  // namespace sb::connect
