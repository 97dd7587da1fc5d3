// Opaque tokens' introspection answers (RFC 7662) as the switchboard reads them
// (docs/auth.md, "Opaque tokens"): an active token of this issuer for this switchboard
// names its caller; one inactive, of another issuer or audience, past its time or naming
// nobody does not; and what is sent to ask.
#include "supervisor/oauth/introspection.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace sb::supervisor::oauth {
namespace {

using json = nlohmann::json;

constexpr std::int64_t kNow = 1'800'000'000;

TokenRules rules() {
  return TokenRules{.issuer = "https://idp.example", .resource = "https://sb.example"};
}

std::string outcome(const json& answer) {
  const auto verdict = read_introspection(answer.dump(), rules(), kNow);
  if (const auto* refusal = std::get_if<TokenRefusal>(&verdict)) return refusal->why;
  return std::get<TokenIdentity>(verdict).identities.at(0);
}

json active() {
  return {{"active", true},
          {"iss", "https://idp.example"},
          {"aud", "https://sb.example"},
          {"sub", "agent"},
          {"exp", kNow + 60},
          {"scope", "mcp tools"},
          {"client_id", "agent"}};
}

TEST(Introspection, AnActiveTokenForThisSwitchboardNamesItsCaller) {
  const auto verdict = read_introspection(active().dump(), rules(), kNow);
  ASSERT_TRUE(std::holds_alternative<TokenIdentity>(verdict));
  const auto& identity = std::get<TokenIdentity>(verdict);
  EXPECT_EQ(identity.identities, std::vector<std::string>{"agent"});
  EXPECT_EQ(identity.scopes, (std::vector<std::string>{"mcp", "tools"}));
  EXPECT_EQ(identity.expires_at, kNow + 60);
  json minimal{{"active", true}, {"sub", "agent"}};
  EXPECT_EQ(outcome(minimal), "agent") << "what the answer does not say is not held against it";
}

TEST(Introspection, AnythingElseIsRefused) {
  EXPECT_EQ(outcome(json{{"active", false}}), "not active");
  EXPECT_EQ(outcome(json{{"active", "true"}, {"sub", "agent"}}), "not active");
  json answer = active();
  answer["iss"] = "https://evil.example";
  EXPECT_EQ(outcome(answer), "another issuer");
  answer = active();
  answer["aud"] = json::array({"https://other.example"});
  EXPECT_EQ(outcome(answer), "minted for another audience");
  answer = active();
  answer["exp"] = kNow - 61;
  EXPECT_EQ(outcome(answer), "expired");
  answer = active();
  answer["nbf"] = kNow + 120;
  EXPECT_EQ(outcome(answer), "not valid yet");
  answer = active();
  answer.erase("sub");
  EXPECT_EQ(outcome(answer), "no sub claim naming the caller");
  EXPECT_EQ(std::get<TokenRefusal>(read_introspection("[]", rules(), kNow)).why,
            "an introspection answer that is not JSON");
}

TEST(Introspection, WhatIsSentToAsk) {
  EXPECT_EQ(introspection_body("a+b/c=d"), "token=a%2Bb%2Fc%3Dd&token_type_hint=access_token");
  EXPECT_EQ(basic_authorization("switchboard:s3cret"), "Basic c3dpdGNoYm9hcmQ6czNjcmV0");
  EXPECT_TRUE(looks_like_jwt("a.b.c"));
  EXPECT_FALSE(looks_like_jwt("opaque-token"));
  EXPECT_FALSE(looks_like_jwt("a.b"));
}

}  // namespace
}  // namespace sb::supervisor::oauth
