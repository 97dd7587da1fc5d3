// One caller's TCP connection: HTTP/1.1 requests read one at a time under the deadlines
// and limits of docs/robustness.md, each answered by the route or, for GET /vm/attach, the
// computer door; keep-alive between them. While a call is pending the hang-up watch runs;
// its response is written by the writer that fits it (plain_response.hpp,
// event_stream.hpp, arriving_reply.hpp). Beast stays in the .cpp.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "shared/log.hpp"
#include "supervisor/http/connection_park.hpp"
#include "supervisor/http/services.hpp"

namespace sb::supervisor {

// The count of open connections, against `[limits] max_connections`: each connection
// holds one place, given back when it is destroyed (or handed over to a worker). And, for
// a switch in place, a way to reach each of them: each open connection's nudge makes it
// look at `park` and do what it can about it.
struct OpenConnections {
  std::size_t count = 0;
  LogThrottle refused;
  std::map<std::uint64_t, std::function<void()>> nudges;
  std::uint64_t next_place = 1;
  std::shared_ptr<ConnectionPark> park;  // while a switch gathers the connections
};

// Serves `socket` until the caller or a deadline ends it.
void serve_connection(boost::asio::ip::tcp::socket socket, const HttpServices& services,
                      std::shared_ptr<OpenConnections> open);

// Serves a connection a switch carried: `bytes` are read before anything from the socket,
// and `call`, when set, is the call the first request among them is, taken up where it
// stood (its response already an event stream, if it had become one). `unheard` is held
// until that request has been routed, or the connection ended.
void take_up_connection(boost::asio::ip::tcp::socket socket, const HttpServices& services,
                        std::shared_ptr<OpenConnections> open, std::string bytes,
                        std::optional<CarriedCall> call, std::shared_ptr<void> unheard);

}  // namespace sb::supervisor
