// Which requests' spans are recorded (supervisor/telemetry/sampler.hpp): the ratio for
// traces the switchboard starts, the caller's flag for its own, and no more than the rate
// of "sampled" flags a second.
#include "supervisor/telemetry/sampler.hpp"

#include <gtest/gtest.h>

namespace sb::supervisor {
namespace {

using namespace std::chrono_literals;

TEST(Sampler, ANewTraceIsSampledByTheRatio) {
  const auto now = Sampler::Clock::now();
  Sampler none(0.0, 100);
  Sampler all(1.0, 100);
  Sampler half(0.5, 100);
  int sampled = 0;
  for (int i = 0; i < 1000; ++i) {
    EXPECT_FALSE(none.sample(std::nullopt, now));
    EXPECT_TRUE(all.sample(std::nullopt, now));
    sampled += half.sample(std::nullopt, now) ? 1 : 0;
  }
  // 1000 draws at one half: far inside [350, 650] unless the draw is not random.
  EXPECT_GT(sampled, 350);
  EXPECT_LT(sampled, 650);
}

TEST(Sampler, ACallersFlagIsFollowedWithinTheRate) {
  const auto now = Sampler::Clock::now();
  const TraceContext sampled{.trace_id = {1}, .parent_id = {1}, .sampled = true};
  const TraceContext not_sampled{.trace_id = {1}, .parent_id = {1}, .sampled = false};
  Sampler sampler(0.0, 10);
  EXPECT_FALSE(sampler.sample(not_sampled, now));
  int honoured = 0;
  for (int i = 0; i < 100; ++i) honoured += sampler.sample(sampled, now) ? 1 : 0;
  EXPECT_EQ(honoured, 10);  // a second's worth at once, then none
  honoured = 0;
  for (int i = 0; i < 100; ++i) honoured += sampler.sample(sampled, now + 500ms) ? 1 : 0;
  EXPECT_EQ(honoured, 5);  // half a second later, half a second's worth
  Sampler never(1.0, 0);
  EXPECT_FALSE(never.sample(sampled, now));
  EXPECT_TRUE(never.sample(std::nullopt, now));
}

}  // namespace
}  // namespace sb::supervisor
