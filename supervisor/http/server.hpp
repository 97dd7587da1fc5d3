// The HTTP/1.1 listener: accepting, within `[limits] max_connections`, and pausing when
// the process runs out of descriptors; each connection is served by connection.hpp. Beast
// stays in the .cpp files.
#pragma once

#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/unique_fd.hpp"
#include "supervisor/http/services.hpp"
#include "supervisor/switching/descriptors.hpp"
#include "supervisor/switching/switch_state.hpp"

namespace sb::supervisor {

class HttpServer {
 public:
  // Binds now; throws std::runtime_error "binding <addr>: <reason>". `services` outlives
  // the server. With `listener`, a listening socket a switch carried for that address, it
  // takes that up instead, so that no connection is refused meanwhile.
  HttpServer(boost::asio::io_context& io, const std::string& ip, unsigned short port,
             const HttpServices& services, base::UniqueFd listener = {});
  ~HttpServer();
  void start();
  void stop();  // stops accepting; connections in progress finish
  std::size_t open_connections() const;
  unsigned short port() const;

  // ---- switching in place (docs/architecture.md, "Switching") ----

  // Stops accepting: new connections wait in the listener's backlog for the next process.
  void stop_accepting();
  int listener_fd() const;  // for the service manager's store
  base::UniqueFd release_listener();
  // Gathers every open connection (connection_park.hpp); `done` runs once all have parked
  // or been dropped, and calls may park.
  void park_connections(std::function<void()> done);
  // The workers have parked: connections waiting for a call may park too.
  void let_calls_park();
  // The drain is over: connections that have not parked are dropped.
  void give_up_parking();
  std::vector<CarriedConnection> take_parked_connections();
  std::vector<NamedDescriptor> take_parked_sockets();
  // Serves connections a switch carried, their sockets among `descriptors` by name.
  // `heard` runs once each of them has had its carried call's request answered or taken
  // up again, or has ended.
  void take_up_connections(std::vector<CarriedConnection> connections,
                           std::vector<NamedDescriptor>& descriptors, std::function<void()> heard);

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace sb::supervisor
