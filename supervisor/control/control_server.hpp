// The control socket behind `switchboard workers`: a Unix socket (mode 0600) on which the
// running supervisor answers one request with its worker table as JSON (workers_table.hpp).
#pragma once

#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

namespace sb::supervisor {

class ControlServer {
 public:
  // Throws std::runtime_error when another supervisor answers on `path` or binding fails.
  // `workers` renders the answer to "workers" as of now.
  ControlServer(boost::asio::io_context& io, std::filesystem::path path,
                std::function<std::string()> workers);
  ~ControlServer();
  void start();
  void stop();

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace sb::supervisor
