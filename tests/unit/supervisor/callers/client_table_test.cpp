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

TEST(ClientTable, AnAccessTokensIdentitiesNameTheFirstClientInTheConfigsOrder) {
  const std::string issuer = "https://idp.example";
  config::Client ops{.name = "ops", .oauth_issuer = issuer, .oauth_identity = "ops"};
  config::Client agents{.name = "agents", .oauth_issuer = issuer, .oauth_identity = "agents"};
  const ClientTable table({ops, agents});
  using Names = std::vector<std::string>;
  EXPECT_EQ(table.identified(issuer, Names{"agents", "ops"})->name, "ops");
  EXPECT_EQ(table.identified(issuer, Names{"nobody", "agents"})->name, "agents");
  EXPECT_FALSE(table.identified(issuer, Names{"nobody"}));
  EXPECT_FALSE(table.identified("https://other.example", Names{"ops"}));
  EXPECT_FALSE(table.identified(issuer, Names{}));
}

}  // namespace
}  // namespace sb::supervisor
