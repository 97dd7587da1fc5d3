// A route's path: its query cut off, one segment percent-decoded.
#include <gtest/gtest.h>

#include "supervisor/routes/routes.hpp"

namespace sb::supervisor {
namespace {

TEST(Paths, DecodeOneSegment) {
  EXPECT_EQ(percent_decode("mac%2Dmini"), "mac-mini");
  EXPECT_EQ(percent_decode("plain"), "plain");
  EXPECT_FALSE(percent_decode("bad%2"));
  EXPECT_FALSE(percent_decode("bad%zz"));
  EXPECT_EQ(request_path("/mcp/a?x=1"), "/mcp/a");
}

}  // namespace
}  // namespace sb::supervisor
