// switchboard-connect's loops (docs/connect.md), one per switchboard URL, all sharing one
// MCP server: the server (the running one, or a new one if it has exited), the secret read
// again, a dial; while attached, every message relayed both ways through the kept session;
// then the decision. Close 4002 and 4003 stop that link for good (two daemons must never
// fight over one computer, and a revoked secret needs an operator); a 401 waits
// `dial_unauthorized`; anything else redials with the project's backoff, each link its
// own. The server lives across attaches; one that exits ends every attach (close 1011),
// and the next attach gets a new one. run() ends when every link has stopped.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "connect/kept_session.hpp"
#include "connect/link.hpp"
#include "connect/mcp_server.hpp"
#include "connect/options.hpp"
#include "connect/write_turn.hpp"
#include "shared/log.hpp"
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
  // Called with how many links are attached, of how many, whenever that changes
  // (readiness: docs/connect.md, "As a service").
  using LinksChanged = std::function<void(std::size_t up, std::size_t of)>;

  Connector(boost::asio::io_context& io, Options options,
            std::shared_ptr<boost::asio::ssl::context> tls, Timings timings,
            LinksChanged on_links_changed = {});

  boost::asio::awaitable<int> run();
  // SIGTERM/SIGINT: close every attach with 1000, stop the server, and run() returns 0.
  void stop();

 private:
  // One switchboard URL and its dial or attach of the moment.
  struct LinkSlot {
    LinkSlot(boost::asio::any_io_executor executor, SwitchboardUrl where)
        : url(std::move(where)), sleep_timer(executor) {}
    SwitchboardUrl url;
    std::shared_ptr<Link> link;  // the current dial or attach, if any
    // What waits to be written to `link`, in order, drained by one writer (`draining`
    // names the link it writes to): a link that does not read never holds back the others
    // (docs/connect.md, "Twins").
    std::deque<std::string> outbox;
    std::size_t outbox_bytes = 0;
    std::shared_ptr<Link> draining;
    boost::asio::steady_timer sleep_timer;
  };

  // The most a link's outbox holds before the server waits for it, or, when another link
  // keeps up (its outbox at most half as full), the link is dropped: two of the largest
  // messages.
  static constexpr std::size_t kMaxOutboxBytes = 2 * kMaxMessageBytes;

  boost::asio::awaitable<void> run_link(LinkId id);
  boost::asio::awaitable<std::string> running_server();
  boost::asio::awaitable<std::string> start_server_unless_running();
  boost::asio::awaitable<void> end_server();
  std::string read_secret(std::string& secret) const;
  boost::asio::awaitable<LinkEnd> relay(LinkId id, std::shared_ptr<Link> link);
  boost::asio::awaitable<void> relay_server();
  boost::asio::awaitable<bool> write_server(const std::string& message, std::uint64_t generation);
  boost::asio::awaitable<void> write_links(std::vector<std::pair<LinkId, std::string>> messages);
  boost::asio::awaitable<void> drain(LinkId id, std::shared_ptr<Link> link);
  void server_failed(std::exception_ptr failure);
  void fail(std::exception_ptr failure);
  void links_changed(LinkId id, const char* what);
  bool another_link_keeps_up(LinkId id) const;
  void log_dropped(const Routed& routed, const char* from);
  boost::asio::awaitable<void> sleep(LinkSlot& slot, std::chrono::milliseconds duration);

  boost::asio::io_context& io_;
  Options options_;
  std::shared_ptr<boost::asio::ssl::context> tls_;
  Timings timings_;
  LinksChanged on_links_changed_;
  std::unique_ptr<McpServer> server_;
  KeptSession session_;  // the server's, as long as it runs
  bool server_reading_ = false;
  // Counts the servers started: what was composed for one is never written to the next.
  std::uint64_t server_generation_ = 0;
  boost::asio::steady_timer server_done_;  // cancelled when relay_server() has ended
  WriteTurn server_turn_;
  WriteTurn server_start_turn_;                   // one link at a time makes sure the server runs
  std::vector<std::unique_ptr<LinkSlot>> links_;  // by LinkId
  std::size_t links_running_ = 0;
  int exit_code_ = kExitStopped;          // of the last link to stop for good
  std::exception_ptr failure_;            // the first that a loop threw
  boost::asio::steady_timer links_done_;  // cancelled when every link has stopped
  // Never expires; cancelled whenever an outbox shrinks or a link ends, which wakes every
  // writer waiting for room (expires_at would cancel the other waiters instead).
  boost::asio::steady_timer room_;
  std::map<std::string, LogThrottle> dropped_;  // by cause (log_dropped)
  std::mt19937 random_{std::random_device{}()};
  bool stopping_ = false;
};

}  // namespace sb::connect
