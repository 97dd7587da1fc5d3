// How the registry starts a worker's process and watches it exit: the product spawns the
// worker program (base/spawn.hpp); the registry's in-process tests put a scripted peer in
// its place, on the same channel descriptors (tests/unit/supervisor/workers/).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <variant>

#include <boost/asio/io_context.hpp>

#include "base/spawn.hpp"

namespace sb::supervisor {

class WorkerProcess {
 public:
  virtual ~WorkerProcess() = default;
  virtual int pid() const = 0;
  // `exited` gets the wait status, once; not if this is destroyed first.
  virtual void async_wait(std::function<void(int wait_status)> exited) = 0;
  virtual void kill() = 0;
};

// Starts the program `request` names with the descriptors it lists: the process, or what
// failed.
using LaunchWorker = std::function<std::variant<std::unique_ptr<WorkerProcess>, std::string>(
    const base::SpawnRequest& request)>;

// The product's: base::spawn, watched on `io`.
LaunchWorker spawn_worker_processes(boost::asio::io_context& io);

}  // namespace sb::supervisor
