// The HTTP/1.1 listener: accepting, within `[limits] max_connections`, and pausing when
// the process runs out of descriptors; each connection is served by connection.hpp. Beast
// stays in the .cpp files.
#pragma once

#include <boost/asio/io_context.hpp>
#include <memory>
#include <string>

#include "supervisor/http/services.hpp"

namespace sb::supervisor {

class HttpServer {
 public:
  // Binds now; throws std::runtime_error "binding <addr>: <reason>". `services` outlives
  // the server.
  HttpServer(boost::asio::io_context& io, const std::string& ip, unsigned short port,
             const HttpServices& services);
  ~HttpServer();
  void start();
  void stop();  // stops accepting; connections in progress finish
  std::size_t open_connections() const;
  unsigned short port() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace sb::supervisor
