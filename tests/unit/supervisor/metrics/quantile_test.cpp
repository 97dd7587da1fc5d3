// The quantiles `switchboard workers --watch` prints are Prometheus' histogram_quantile()
// over the same buckets.
#include <gtest/gtest.h>

#include <array>

#include "supervisor/metrics/metrics.hpp"

namespace sb::supervisor {
namespace {

TEST(Quantile, InterpolatesWithinTheBucketAsPrometheusDoes) {
  const std::array<double, 3> bounds{1, 2, 4};
  // 10 in (0,1], 10 in (1,2]: the median is the top of the first bucket, p75 half-way up
  // the second.
  EXPECT_DOUBLE_EQ(*quantile(0.5, {10, 10, 0, 0}, bounds), 1);
  EXPECT_DOUBLE_EQ(*quantile(0.75, {10, 10, 0, 0}, bounds), 1.5);
  EXPECT_DOUBLE_EQ(*quantile(0.5, {0, 0, 4, 0}, bounds), 3);
  // Above every bound: the highest bound, as histogram_quantile() says.
  EXPECT_DOUBLE_EQ(*quantile(0.99, {0, 0, 0, 5}, bounds), 4);
  EXPECT_EQ(quantile(0.5, {0, 0, 0, 0}, bounds), std::nullopt);
}

}  // namespace
}  // namespace sb::supervisor
