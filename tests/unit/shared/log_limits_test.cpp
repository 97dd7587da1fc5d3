// How often a line a peer can repeat reaches the log: LogThrottle (once per interval, with
// a count) and LogAllowance (so many per interval, the rest counted).
#include <gtest/gtest.h>

#include <thread>

#include "shared/log.hpp"

namespace sb {
namespace {

using namespace std::chrono_literals;

TEST(LogThrottle, TheFirstIsDueThenNoneUntilTheIntervalIsOverThenTheCount) {
  LogThrottle throttle(20ms);
  EXPECT_EQ(throttle.due(), 1u);
  EXPECT_FALSE(throttle.due());
  EXPECT_FALSE(throttle.due());
  std::this_thread::sleep_for(25ms);  // past the interval, whatever the scheduler does
  EXPECT_EQ(throttle.due(), 3u);
}

TEST(LogAllowance, LetsTheAllowanceThroughThenCountsTheRest) {
  LogAllowance allowance(3, std::chrono::hours(1));
  for (int line = 0; line < 3; ++line) {
    const auto verdict = allowance.take();
    EXPECT_TRUE(verdict.write);
    EXPECT_FALSE(verdict.first_withheld);
    EXPECT_EQ(verdict.withheld_before, 0u);
  }
  const auto first_held = allowance.take();
  EXPECT_FALSE(first_held.write);
  EXPECT_TRUE(first_held.first_withheld);
  const auto next_held = allowance.take();
  EXPECT_FALSE(next_held.write);
  EXPECT_FALSE(next_held.first_withheld);
}

TEST(LogAllowance, TheNextIntervalsFirstLineCarriesTheCountHeldBack) {
  LogAllowance allowance(1, 20ms);
  EXPECT_TRUE(allowance.take().write);
  EXPECT_FALSE(allowance.take().write);
  EXPECT_FALSE(allowance.take().write);
  std::this_thread::sleep_for(25ms);
  const auto verdict = allowance.take();
  EXPECT_TRUE(verdict.write);
  EXPECT_EQ(verdict.withheld_before, 2u);
  EXPECT_EQ(allowance.take().withheld_before, 0u);
}

}  // namespace
}  // namespace sb
