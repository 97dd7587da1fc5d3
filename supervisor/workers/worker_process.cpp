#include "supervisor/workers/worker_process.hpp"

#include <utility>

namespace sb::supervisor {
namespace {

class SpawnedWorker final : public WorkerProcess {
 public:
  SpawnedWorker(boost::asio::io_context& io, base::Spawned spawned)
      : child_(io, std::move(spawned)) {}
  int pid() const override { return child_.pid(); }
  void async_wait(std::function<void(int wait_status)> exited) override {
    child_.async_wait(std::move(exited));
  }
  void kill() override { child_.kill(); }

 private:
  base::ChildProcess child_;
};

}  // namespace

LaunchWorker spawn_worker_processes(boost::asio::io_context& io) {
  return [&io](const base::SpawnRequest& request)
             -> std::variant<std::unique_ptr<WorkerProcess>, std::string> {
    auto spawned = base::spawn(request);
    if (auto* failure = std::get_if<std::string>(&spawned)) return std::move(*failure);
    return std::make_unique<SpawnedWorker>(io, std::move(std::get<base::Spawned>(spawned)));
  };
}

}  // namespace sb::supervisor
