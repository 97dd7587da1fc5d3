// The product's timers and what SWITCHBOARD_TEST_TIMINGS may say of them.
#include <gtest/gtest.h>

#include "shared/timings.hpp"

namespace sb {
namespace {

TEST(Timings, TheProductsValuesUnlessNamed) {
  std::string error;
  const auto product = parse_timings("", error);
  ASSERT_TRUE(product);
  EXPECT_EQ(product->handshake, std::chrono::seconds(15));
  EXPECT_EQ(product->ping_interval, std::chrono::seconds(20));
  EXPECT_EQ(product->heartbeat, std::chrono::seconds(1));
  EXPECT_EQ(product->heartbeat_stale, std::chrono::seconds(3));
  EXPECT_EQ(product->stall_kill, std::chrono::seconds(30));
  EXPECT_EQ(product->audit_window, std::chrono::seconds(60));
  const auto short_ones = parse_timings("handshake=1500,stall_kill=3000", error);
  ASSERT_TRUE(short_ones);
  EXPECT_EQ(short_ones->handshake, std::chrono::milliseconds(1500));
  EXPECT_EQ(short_ones->stall_kill, std::chrono::milliseconds(3000));
  EXPECT_EQ(short_ones->ping_interval, std::chrono::seconds(20));
}

TEST(Timings, AnythingElseIsAnError) {
  for (const char* text : {"handshake", "handshake=", "handshake=0", "handshake=-5",
                           "handshake=1.5", "handshake=99999999", "nap=100", "handshake=10,"}) {
    std::string error;
    EXPECT_FALSE(parse_timings(text, error)) << text;
    EXPECT_FALSE(error.empty()) << text;
  }
}

}  // namespace
}  // namespace sb
