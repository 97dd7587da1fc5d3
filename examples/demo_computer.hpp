// What the parts of switchboard-demo-computer share: its name, the contract's numbers
// (docs/protocol.md, "Daemons"), our own limits, and the one log.
#pragma once

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/asio_names.hpp"

namespace demo {

using namespace sb::asio_names;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

inline constexpr std::string_view kProgram = "switchboard-demo-computer";
inline constexpr std::string_view kVersion = SWITCHBOARD_VERSION;  // defined by CMake
inline constexpr std::string_view kProtocolVersion = "2025-06-18";

// The contract's numbers.
inline constexpr std::chrono::milliseconds kFirstBackoff = 1s;
inline constexpr std::chrono::milliseconds kMaxBackoff = 60s;
inline constexpr std::chrono::milliseconds kStableAttempt = 60s;  // resets the backoff
inline constexpr Clock::duration kUnauthorizedWait = 300s;
inline constexpr Clock::duration kPingInterval = 20s;
inline constexpr Clock::duration kDeadAfterSilence = 60s;
inline constexpr std::size_t kMaxMessageBytes = 16 * 1024 * 1024;
inline constexpr std::uint16_t kCloseReplaced = 4002;
inline constexpr std::uint16_t kCloseRevoked = 4003;
inline constexpr std::uint16_t kCloseAbnormal = 1006;  // no close frame: the connection dropped

// Ours: how long one dial may take before it counts as failed.
inline constexpr auto kConnectTimeout = 15s;
inline constexpr auto kUpgradeTimeout = 15s;
// Tools run off the socket's thread; two threads are plenty for three quick tools.
inline constexpr int kToolThreads = 2;

// One line per event on stderr, "HH:MM:SS message". Tool threads log too, hence the lock.
void log_line(const std::string& message);

}  // namespace demo
