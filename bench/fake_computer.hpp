// Fake computers for the bench: WebSocket *clients* on one io_context thread of their own,
// each dialling `GET /vm/attach` with `Authorization: Bearer <secret>` and serving MCP
// JSON-RPC the way a daemon does (docs/protocol.md, "Daemons"): `initialize` answered with
// a result, `notifications/initialized` noted, every `tools/call` answered at once. The
// same code serves the direct floor: there the bench's own WebSocket server is what they
// dial.
//
// A tools/call's arguments choose the answer: {"nonce": N, "bytes": 0} is a small text
// result echoing the nonce; {"bytes": B} with B > 0 is an image content item whose base64
// `data` is B characters long, like a screenshot; {"progress": K} sends K
// notifications/progress with the request's progress token before the result;
// {"list_changes": K} sends K notifications/tools/list_changed before it, for every open
// stream of the computer's callers;
// {"hold": true} is never answered (it waits for its notifications/cancelled, whose
// arrival is timed).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

namespace sbbench {

// The base64 text of `bytes` characters that every large result carries (made once per
// size, random, then shared; callers use it to check what they received).
std::shared_ptr<const std::string> image_data(std::size_t bytes);

class ComputerFleet {
 public:
  // `fault_every` N > 0: every Nth tools/call is answered wrongly (a corrupted nonce or a
  // truncated image), to prove that the bench notices failed calls.
  explicit ComputerFleet(int fault_every = 0);
  ~ComputerFleet();
  ComputerFleet(const ComputerFleet&) = delete;
  ComputerFleet& operator=(const ComputerFleet&) = delete;

  // Starts dialling ws://127.0.0.1:<port><target> and returns at once.
  void dial(int port, const std::string& secret, const std::string& target = "/vm/attach");

  int upgraded() const { return upgraded_.load(); }        // 101 received
  int initialized() const { return initialized_.load(); }  // notifications/initialized seen
  int dial_failures() const { return dial_failures_.load(); }
  long calls() const { return calls_.load(); }     // tools/call answered
  int held() const { return held_.load(); }        // tools/call held unanswered
  int cancels() const { return cancels_.load(); }  // notifications/cancelled received
  std::chrono::steady_clock::time_point last_cancel() const;
  std::chrono::steady_clock::time_point last_upgraded() const;
  std::chrono::steady_clock::time_point last_initialized() const;

  // Waits until `count` sessions have been initialized in total (false on timeout).
  bool wait_initialized(int count, std::chrono::milliseconds timeout) const;

 private:
  struct Impl;
  friend struct Impl;
  std::shared_ptr<Impl> impl_;
  std::atomic<int> upgraded_{0};
  std::atomic<int> initialized_{0};
  std::atomic<int> dial_failures_{0};
  std::atomic<long> calls_{0};
  std::atomic<int> held_{0};
  std::atomic<int> cancels_{0};
  std::atomic<std::int64_t> last_cancel_ns_{0};
  std::atomic<std::int64_t> last_upgraded_ns_{0};
  std::atomic<std::int64_t> last_initialized_ns_{0};
  int fault_every_;
};

}  // namespace sbbench
