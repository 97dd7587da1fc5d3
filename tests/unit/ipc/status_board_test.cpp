// The status board across two mappings: what a writer publishes, a reader sees whole.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "ipc/status_board.hpp"

namespace sb::ipc {
namespace {

TEST(StatusBoard, ReaderSeesWhatTheWriterPublished) {
  StatusReader reader("/switchboard-test-" + std::to_string(::getpid()));
  StatusWriter writer(reader.segment_name());
  reader.unlink();  // both mappings stay valid without the name
  EXPECT_GT(reader.heartbeat_age_ms(), 1'000'000);

  ComputerStatus status;
  status.state = ComputerState::kReady;
  status.worker_pid = 42;
  status.in_flight = 3;
  status.max_in_flight = 8;
  status.attached_at_ms = 1234;
  status.peer = "alice via 127.0.0.1:5";
  status.server_json = R"({"name":"fake"})";
  writer.publish(status);
  writer.heartbeat();

  const auto seen = reader.read();
  EXPECT_EQ(seen.state, ComputerState::kReady);
  EXPECT_EQ(seen.worker_pid, 42);
  EXPECT_EQ(seen.in_flight, 3u);
  EXPECT_EQ(seen.max_in_flight, 8u);
  EXPECT_EQ(seen.attached_at_ms, 1234);
  EXPECT_EQ(seen.peer, "alice via 127.0.0.1:5");
  EXPECT_EQ(seen.server_json, R"({"name":"fake"})");
  EXPECT_LT(reader.heartbeat_age_ms(), 5'000);
}

// The reader must never see a half-written record, nor report a busy-but-ready computer
// as idle because the writer happened to be mid-update.
TEST(StatusBoard, ConcurrentReadsSeeOnlyCompleteRecords) {
  StatusReader reader("/switchboard-test-race-" + std::to_string(::getpid()));
  StatusWriter writer(reader.segment_name());
  auto status_for = [](std::uint32_t n) {
    ComputerStatus status;
    status.state = ComputerState::kReady;
    status.in_flight = n;
    status.peer = "peer-" + std::to_string(n);
    return status;
  };
  writer.publish(status_for(0));
  std::atomic<bool> stop{false};
  std::thread writing([&] {
    for (std::uint32_t n = 1; !stop.load(); ++n) writer.publish(status_for(n % 1000));
  });
  int idle = 0;
  int torn = 0;
  for (int i = 0; i < 200'000; ++i) {
    const auto seen = reader.read();
    if (seen.state != ComputerState::kReady) ++idle;
    if (seen.peer != "peer-" + std::to_string(seen.in_flight)) ++torn;
  }
  stop = true;
  writing.join();
  EXPECT_EQ(idle, 0);
  EXPECT_EQ(torn, 0);
}

TEST(StatusBoard, AnOversizedServerInfoIsShownAsNull) {
  StatusReader reader("/switchboard-test-big-" + std::to_string(::getpid()));
  StatusWriter writer(reader.segment_name());
  ComputerStatus status;
  status.server_json = "\"" + std::string(10000, 'a') + "\"";
  writer.publish(status);
  EXPECT_EQ(reader.read().server_json, "null");
}

}  // namespace
}  // namespace sb::ipc
