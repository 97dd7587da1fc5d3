// The control socket behind `switchboard workers`: a Unix socket (mode 0600) on which the
// running supervisor answers one request with its worker table as JSON.
#pragma once

#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <memory>
#include <string>

#include "supervisor/worker_registry.hpp"

namespace sb::supervisor {

class ControlServer {
 public:
  // Throws std::runtime_error when another supervisor answers on `path` or binding fails.
  ControlServer(boost::asio::io_context& io, std::filesystem::path path,
                const WorkerRegistry& workers);
  ~ControlServer();
  void start();
  void stop();

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

// The JSON of `switchboard workers --json`.
std::string workers_json(const std::vector<WorkerRow>& rows);
// The table of `switchboard workers`.
std::string workers_table(const std::string& json_text);

}  // namespace sb::supervisor
