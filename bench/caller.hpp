// One connection of the caller pool (callers.hpp) and what a run asks of it, whichever path
// it takes: over HTTP (http_caller.hpp) or straight over a WebSocket (direct_caller.hpp).
// Included by callers.cpp alone; every caller lives on the pool's thread.
#pragma once

#include <atomic>
#include <boost/beast/core.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "base/asio_names.hpp"
#include "bench/callers.hpp"

namespace sbbench {

using namespace sb::asio_names;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

inline constexpr std::size_t kMaxResponseBytes = 64 * 1024 * 1024;

class Caller {
 public:
  explicit Caller(int index) : index_(index) {}
  virtual ~Caller() = default;
  // One tools/call, checked: an error text when it failed.
  virtual net::awaitable<std::optional<std::string>> call(const CallSpec& spec) = 0;
  // A call the computer holds, under a fresh id stored in `id` before it is sent; done when
  // it is over for this caller (HTTP: answered -32800 once cancelled; WebSocket: written).
  virtual net::awaitable<std::optional<std::string>> hold(std::atomic<std::uint64_t>& id) = 0;
  // notifications/cancelled for call `id`; `sent` is when its write began.
  virtual net::awaitable<std::optional<std::string>> cancel(std::uint64_t id,
                                                            Clock::time_point& sent) = 0;
  // The connection is unusable (a transport error): stop calling on it.
  bool broken() const { return broken_; }
  // When the last call's response head was in (HTTP callers only; a WebSocket message
  // comes whole).
  std::optional<Clock::time_point> head_at() const { return head_at_; }
  // Closes the connection, so that what waits on it ends (on the callers' thread).
  virtual void abort() = 0;

 protected:
  std::optional<std::string> transport_error(const char* what, const beast::error_code& error) {
    broken_ = true;
    return std::string(what) + ": " + error.message();
  }
  int index_;
  std::uint64_t next_id_ = 1;
  bool broken_ = false;
  std::optional<Clock::time_point> head_at_;
};

}  // namespace sbbench
