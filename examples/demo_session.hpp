// (3) Session: one WebSocket to the switchboard, from dial to close.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>

#include "examples/demo_computer.hpp"
#include "shared/dial_target.hpp"

namespace demo {

// Everything here runs on the io_context's single thread except the tools, which run on a
// small pool and post their reply back; so the socket keeps reading (and answering pings)
// while a call is worked on, and replies may leave in any order, as the contract allows.

enum class DialOutcome { kAttached, kUnauthorized, kFailed };

struct DialResult {
  DialOutcome outcome;
  std::string detail;  // why a dial failed
};

struct SessionEnd {
  std::uint16_t code;  // the close code the switchboard sent; 1006 if none came
  std::string reason;
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(net::any_io_executor executor, net::thread_pool& tool_pool)
      : executor_(executor),
        ws_(executor),
        tool_pool_(tool_pool),
        wake_writer_(executor),
        ping_timer_(executor) {}

  net::awaitable<DialResult> dial(const sb::DialTarget& endpoint, const std::string& secret);

  // Serves MCP until the socket ends.
  net::awaitable<SessionEnd> serve();

  bool attached() const { return attached_ && !finished_; }

  // Our own orderly goodbye (SIGINT/SIGTERM): close 1000; serve() returns once the
  // switchboard answers the close.
  void close_normally();

 private:
  struct Outgoing {
    bool ping = false;
    std::string text;
  };

  void on_message(const std::string& text);

  // Queues one reply for the writer. Runs on the io thread only.
  void send(const json& reply);

  // The only writer: Beast allows one write at a time, so replies and our pings queue here.
  net::awaitable<void> write_loop();

  // Ping every 20 s. Silence for 60 s (no pong to our pings, nor anything else) means the
  // path is dead even if TCP has not noticed: drop the socket so the dial loop takes over.
  net::awaitable<void> ping_loop();

  const net::any_io_executor executor_;  // read from tool threads to post replies back
  websocket::stream<beast::tcp_stream> ws_;
  net::thread_pool& tool_pool_;
  net::steady_timer wake_writer_;
  net::steady_timer ping_timer_;
  std::deque<Outgoing> outbox_;
  Clock::time_point last_heard_;
  std::string dropped_because_;  // set when we drop a silent connection ourselves
  bool attached_ = false;
  bool finished_ = false;
  bool closing_ = false;
};

}  // namespace demo
