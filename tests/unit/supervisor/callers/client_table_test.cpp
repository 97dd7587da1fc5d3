// Who is calling: a bearer token finds its client and nobody else.
#include <gtest/gtest.h>

#include "supervisor/callers/client_table.hpp"

namespace sb::supervisor {
namespace {

TEST(ClientTable, FindsTheCallerByTokenAndNobodyElse) {
  config::Client alice{
      .name = "alice", .token = verifier_of("alice-token"), .default_computer = "macmini"};
  alice.grant.wildcard = true;
  config::Client bob{
      .name = "bob", .token = verifier_of("bob-token"), .default_computer = "macmini"};
  const ClientTable table({alice, bob});
  ASSERT_TRUE(table.authenticate("bob-token"));
  EXPECT_EQ(table.authenticate("bob-token")->name, "bob");
  EXPECT_TRUE(table.authenticate("alice-token")->wildcard());
  EXPECT_FALSE(table.authenticate("carol-token"));
  EXPECT_FALSE(table.authenticate(std::nullopt));
}

}  // namespace
}  // namespace sb::supervisor
