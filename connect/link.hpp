// One WebSocket from a computer to the switchboard's `GET /vm/attach` (docs/protocol.md,
// "Daemons"): dialled with the secret as a bearer token over ws:// or wss://, then JSON-RPC
// messages both ways, one per text frame, byte for byte. While attached it pings every
// `ping` and drops the socket after `silence` without hearing anything, so a dead path is
// noticed even when TCP has not.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ssl/context.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "shared/dial_target.hpp"
#include "shared/http_proxy.hpp"

namespace sb::connect {

// The largest message either way (the switchboard's own limit).
inline constexpr std::size_t kMaxMessageBytes = 16 * 1024 * 1024;

enum class DialOutcome { kAttached, kUnauthorized, kFailed };

struct DialResult {
  DialOutcome outcome = DialOutcome::kFailed;
  std::string detail;  // why a dial failed
};

struct LinkEnd {
  std::uint16_t code = 1006;  // the close code the switchboard sent; 1006 if none came
  std::string reason;
};

struct LinkTimings {
  std::chrono::milliseconds ping{20'000};
  std::chrono::milliseconds silence{60'000};
};

class Link {
 public:
  virtual ~Link() = default;

  // Connects and upgrades, with `secret` as the bearer ("": no Authorization, a gateway
  // on the path adds it). On kAttached the link is up: read(), write(), close().
  virtual boost::asio::awaitable<DialResult> dial(const std::string& secret) = 0;
  // The next text message; nullopt once the socket has ended (then end() says how).
  virtual boost::asio::awaitable<std::optional<std::string>> read() = 0;
  // Sends one text message; false when the socket has failed. One write at a time.
  virtual boost::asio::awaitable<bool> write(std::string_view text) = 0;
  // Starts the closing handshake with `code` (once; later calls do nothing). During a
  // dial, gives the dial up.
  virtual void close(std::uint16_t code, std::string_view reason) = 0;
  // Drops the socket at once, without the closing handshake: for a switchboard that does
  // not read, which would never take a close frame either. end() then says `code`.
  virtual void drop(std::uint16_t code, std::string_view reason) = 0;
  virtual LinkEnd end() const = 0;
};

// `tls`: the client context for wss:// and an https:// proxy (null when neither). With
// `hop`, the link is a CONNECT tunnel through that proxy (inside TLS to the proxy for an
// https:// one), and TLS (for wss://) runs end to end inside the tunnel.
std::shared_ptr<Link> make_link(boost::asio::any_io_executor executor, const DialTarget& target,
                                std::shared_ptr<boost::asio::ssl::context> tls, LinkTimings timings,
                                std::string user_agent, std::optional<ProxyHop> hop = {});

}  // namespace sb::connect
