// The HTTP/1.1 listener: one connection object per caller, keep-alive, the connection cap,
// deadlines and HTTP errors of docs/robustness.md, the WebSocket attach hand-over, and the
// hang-up watch that gives a caller's in-flight share back the moment it disconnects.
// Beast stays in the .cpp.
#pragma once

#include <boost/asio/io_context.hpp>
#include <memory>
#include <string>

#include "supervisor/routes/state.hpp"

namespace sb::supervisor {

class HttpServer {
 public:
  // Binds now; throws std::runtime_error "binding <addr>: <reason>".
  HttpServer(boost::asio::io_context& io, const std::string& ip, unsigned short port,
             SupervisorState& state);
  ~HttpServer();
  void start();
  void stop();  // stops accepting; connections in progress finish
  std::size_t open_connections() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace sb::supervisor
