// The control socket behind `switchboard workers`: a Unix socket (mode 0600) on which the
// running supervisor answers one request with its worker table as JSON (workers_table.hpp).
#pragma once

#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "base/unique_fd.hpp"

namespace sb::supervisor {

class ControlServer {
 public:
  // Throws std::runtime_error when another supervisor answers on `path` or binding fails.
  // `workers` renders the answer to "workers" as of now. With `listener`, the socket a
  // switch in place carried for `path`, it takes that up instead of binding.
  ControlServer(boost::asio::io_context& io, std::filesystem::path path,
                std::function<std::string()> workers, base::UniqueFd listener = {});
  ~ControlServer();
  void start();
  void stop();

  // "upgrade" (`switchboard upgrade`): the requester's connection is handed to `upgrade`,
  // which answers on it when the switch is over, however long that takes.
  void on_upgrade(std::function<void(base::UniqueFd requester)> upgrade);
  // For a switch in place (docs/architecture.md, "Switching"): the listener, no longer
  // accepted on here, and its path left in place for the next process.
  base::UniqueFd release_listener();
  int listener_fd() const;  // for the service manager's store

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace sb::supervisor
