// The supervisor's record of a worker: when its computer counts as responsive.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "supervisor/workers/worker_record.hpp"

namespace sb::supervisor {
namespace {

TEST(WorkerRecord, MomentarilyTornRecordsKeepTheComputerResponsive) {
  WorkerRecord worker;
  worker.status =
      std::make_unique<ipc::StatusReader>("/switchboard-test-torn-" + std::to_string(::getpid()));
  ipc::StatusWriter writer(worker.status->segment_name());
  ipc::ComputerStatus ready;
  ready.state = ipc::ComputerState::kReady;
  writer.heartbeat();
  writer.publish(ready);
  std::atomic<bool> stop{false};
  std::thread publishing([&] {
    for (std::uint32_t n = 0; !stop.load(); ++n) {
      ready.in_flight = n % 64;
      writer.publish(ready);
      writer.heartbeat();
    }
  });
  int unresponsive = 0;
  for (int i = 0; i < 200'000; ++i) {
    worker.status->read();
    if (!worker.responsive(std::chrono::seconds(3))) ++unresponsive;
  }
  stop = true;
  publishing.join();
  EXPECT_EQ(unresponsive, 0) << "after " << worker.status->torn_reads() << " torn reads";
}

}  // namespace
}  // namespace sb::supervisor
