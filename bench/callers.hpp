// The callers: what the bench measures with. On one io_context thread of their own they
// make the same `tools/call` two ways:
//   relay  — a keep-alive HTTP/1.1 POST /mcp/<computer> to the switchboard;
//   direct — the same JSON-RPC text straight over a WebSocket to the same fake computer
//            code (the bench listens; a fake computer dials it as it dials /vm/attach,
//            and the caller runs the MCP handshake the way the switchboard does).
// Both build the same request and check the same reply (id, nonce, image length and
// bytes), so the difference between the two is what the relay costs. A yardstick too:
//   bare relay — the relay's request to the bare relay (bare_relay_peer.hpp): the same
//            layout with none of the relay's work, the floor it is measured against;
//   nginx, nginx proxy, nginx inner proxy — the relay's very HTTP request to nginx
//            answering a fixed reply of the same size itself, and through one nginx
//            reverse-proxy hop from another process or inside its own (nginx_peer.hpp);
//            the reply is checked byte for byte.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bench/fake_computer.hpp"

namespace sbbench {

// kRelay2026: the relay's call from a 2026-07-28 caller (docs/protocol.md, "Eras").
// kRelayJwt: the relay's call from a caller signed in with a JWT access token (docs/auth.md).
enum class Path {
  kRelay,
  kDirect,
  kBareRelay,
  kNginx,
  kNginxProxy,
  kNginxInnerProxy,
  kRelay2026,
  kRelayJwt
};

struct CallSpec {
  std::size_t result_bytes = 0;  // 0: a small text result; else the image data's length
  int progress = 0;  // notifications/progress the computer sends first (a stream for HTTP)
};

// What a run of calls did.
struct Tally {
  long ok = 0;
  long failed = 0;
  std::string first_error;
  double seconds = 0;                      // wall time of the run
  std::vector<std::int64_t> latencies_ns;  // sequential runs only: each round trip
  // ... and, for an HTTP caller, from the start of each call to its response head
  std::vector<std::int64_t> head_latencies_ns;
  // Concurrent runs: each caller's longest wait between two replies (from the run's start
  // for the first), in nanoseconds: what a pause in the middle of the run cost each.
  std::vector<std::int64_t> longest_gaps_ns;
};

class CallerPool {
 public:
  CallerPool();
  ~CallerPool();
  CallerPool(const CallerPool&) = delete;
  CallerPool& operator=(const CallerPool&) = delete;

  // Replaces the callers of `path` (the relay's or the bare relay's) with `count` keep-alive
  // connections to `port`; caller i posts to /mcp/<computers[i % computers.size()]>. An
  // error text on failure.
  std::optional<std::string> connect_relay(int port, const std::string& token,
                                           const std::vector<std::string>& computers, int count,
                                           Path path = Path::kRelay);
  // Replaces the callers of `path` (one of nginx's) with `count` keep-alive
  // connections to `port` that post the relay's request and expect `reply` exactly.
  std::optional<std::string> connect_fixed(Path path, int port, std::string reply, int count);
  // Replaces the direct callers with `count` WebSockets that `fleet` dials in to the bench,
  // each past its MCP handshake. An error text on failure.
  std::optional<std::string> connect_direct(ComputerFleet& fleet, int count);

  // `calls` calls one after another on the first caller of `path`, each timed.
  Tally sequential(Path path, const CallSpec& spec, int calls);
  // The first `callers` callers of `path` each call in a loop, until `duration` has passed
  // or `max_calls` calls have been started in all.
  Tally concurrent(Path path, const CallSpec& spec, int callers, std::chrono::milliseconds duration,
                   long max_calls);
  // `samples` times, one after another: a call the computer holds, then its
  // notifications/cancelled; each latency is from the cancel's write by the caller to its
  // arrival at `fleet` (the relay needs two callers: the cancel is a request of its own).
  Tally cancels(Path path, const ComputerFleet& fleet, int samples);
  // Relayed calls answered as they should be, over every run so far.
  long relayed_ok() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A blocking keep-alive HTTP client for polling routes such as GET /computers, and for the
// soak's callers.
class HttpPoller {
 public:
  HttpPoller(int port, std::string token);
  ~HttpPoller();
  // Status and body, or nothing when the connection failed (it reconnects next time).
  std::optional<std::pair<int, std::string>> get(const std::string& target);
  // A JSON POST (an MCP message), answered the same way.
  std::optional<std::pair<int, std::string>> post(const std::string& target, std::string body);

 private:
  // `verb` is a boost::beast::http::verb, kept out of this header.
  std::optional<std::pair<int, std::string>> exchange(int verb, const std::string& target,
                                                      std::string body);

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sbbench
