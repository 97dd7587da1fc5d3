// What `switchboard workers --watch` prints: calls/s and p50 between two answers.
#include <gtest/gtest.h>

#include "supervisor/control/workers_table.hpp"
#include "supervisor/metrics/metrics.hpp"

namespace sb::supervisor {
namespace {

using namespace std::chrono_literals;

TEST(WorkersTable, WatchShowsCallsPerSecondAndP50BetweenTwoAnswers) {
  Metrics metrics;
  const WorkerRow row{.computer = "alpha", .pid = 42, .state = "ready", .max_in_flight = 8};
  const std::string before = workers_json({row}, metrics);
  for (int i = 0; i < 20; ++i) {
    metrics.call_ended(
        CallEnd{.computer = "alpha", .caller = "c", .tool = "t", .outcome = "ok", .duration = 3ms});
  }
  const std::string after = workers_json({row}, metrics);
  const std::string table = workers_table(after, before, 2.0);
  EXPECT_NE(table.find("CALLS/S"), std::string::npos) << table;
  EXPECT_NE(table.find("10.0"), std::string::npos) << table;    // 20 calls in 2 s
  EXPECT_NE(table.find("2.5 ms"), std::string::npos) << table;  // half of (0, 5 ms]
  // The first table of a watch has nothing to compare with.
  EXPECT_EQ(workers_table(after, "", 1.0).find("10.0"), std::string::npos);
}

}  // namespace
}  // namespace sb::supervisor
