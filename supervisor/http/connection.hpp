// One caller's TCP connection: HTTP/1.1 requests read one at a time under the deadlines
// and limits of docs/robustness.md, each answered by the route or, for GET /vm/attach, the
// computer door; keep-alive between them. While a call is pending the hang-up watch runs;
// its response is written by the writer that fits it (plain_response.hpp,
// event_stream.hpp, arriving_reply.hpp). Beast stays in the .cpp.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <cstddef>
#include <memory>

#include "shared/log.hpp"
#include "supervisor/http/services.hpp"

namespace sb::supervisor {

// The count of open connections, against `[limits] max_connections`: each connection
// holds one place, given back when it is destroyed (or handed over to a worker).
struct OpenConnections {
  std::size_t count = 0;
  LogThrottle refused;
};

// Serves `socket` until the caller or a deadline ends it.
void serve_connection(boost::asio::ip::tcp::socket socket, const HttpServices& services,
                      std::shared_ptr<OpenConnections> open);

}  // namespace sb::supervisor
