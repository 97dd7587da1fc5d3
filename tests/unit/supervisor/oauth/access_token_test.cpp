// OAuth access tokens checked as a resource server checks them (docs/auth.md, "What is
// checked"), with keys made here by OpenSSL for each algorithm accepted: a token signed by
// the issuer's key for this switchboard, and every way one may be wrong.
#include "supervisor/oauth/access_token.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/signing_key.hpp"
#include "shared/text.hpp"

namespace sb::supervisor::oauth {
namespace {

using harness::SigningKey;
using json = nlohmann::json;

SigningKey make_key(Algorithm algorithm, std::string kid) {
  return harness::make_signing_key(name_of(algorithm), std::move(kid));
}

constexpr std::int64_t kNow = 1'800'000'000;

TokenRules rules() {
  return TokenRules{
      .issuer = "https://idp.example",
      .resource = "https://sb.example",
      .algorithms = {Algorithm::kRS256, Algorithm::kPS256, Algorithm::kES256, Algorithm::kEdDSA}};
}

json good_claims() {
  return {{"iss", "https://idp.example"},
          {"aud", "https://sb.example"},
          {"sub", "agent-7"},
          {"exp", kNow + 300},
          {"iat", kNow - 5},
          {"scope", "mcp  tools"},
          {"client_id", "agent-7"}};
}

std::string token_of(const SigningKey& key, const json& claims, json header = json::object()) {
  if (!header.contains("typ")) header["typ"] = "at+jwt";
  return key.compact_jws(std::move(header), claims);
}

std::vector<PublicKey> key_set(const std::vector<const SigningKey*>& keys) {
  json jwks{{"keys", json::array()}};
  for (const auto* key : keys) jwks["keys"].push_back(key->jwk());
  auto read = read_key_set(jwks.dump());
  EXPECT_TRUE(std::holds_alternative<std::vector<PublicKey>>(read)) << std::get<std::string>(read);
  return std::get<std::vector<PublicKey>>(read);
}

std::string refusal(const std::variant<TokenIdentity, TokenRefusal>& verdict) {
  const auto* refused = std::get_if<TokenRefusal>(&verdict);
  return refused ? refused->why : "accepted";
}

TEST(AccessToken, EachAcceptedAlgorithmsTokenNamesItsCaller) {
  for (const Algorithm algorithm :
       {Algorithm::kRS256, Algorithm::kPS256, Algorithm::kES256, Algorithm::kEdDSA}) {
    const SigningKey key = make_key(algorithm, "k1");
    const auto verdict =
        check_access_token(token_of(key, good_claims()), key_set({&key}), rules(), kNow);
    const auto* identity = std::get_if<TokenIdentity>(&verdict);
    ASSERT_TRUE(identity) << name_of(algorithm) << ": " << refusal(verdict);
    EXPECT_EQ(identity->identities, std::vector<std::string>{"agent-7"});
    EXPECT_EQ(identity->issuer, "https://idp.example");
    EXPECT_EQ(identity->scopes, (std::vector<std::string>{"mcp", "tools"}));
    EXPECT_EQ(identity->expires_at, kNow + 300);
  }
}

TEST(AccessToken, AWrongOrForgedTokenIsRefused) {
  const SigningKey key = make_key(Algorithm::kES256, "k1");
  const SigningKey other = make_key(Algorithm::kES256, "k2");
  const auto keys = key_set({&key});
  const auto refused = [&](const std::string& token, TokenRules checked = rules()) {
    return refusal(check_access_token(token, keys, checked, kNow));
  };
  auto claims = good_claims();
  EXPECT_EQ(refused(token_of(key, claims, {{"typ", "JWT"}})),
            "not an access token (typ is not at+jwt)")
      << "an ID token is not an access token";
  EXPECT_EQ(refused(token_of(key, claims, {{"typ", "application/AT+JWT"}})), "accepted");
  EXPECT_EQ(refused(token_of(key, claims, {{"alg", "none"}})), "an algorithm not accepted");
  EXPECT_EQ(refused(token_of(key, claims, {{"alg", "HS256"}})), "an algorithm not accepted");
  TokenRules only_rsa = rules();
  only_rsa.algorithms = {Algorithm::kRS256};
  EXPECT_EQ(refused(token_of(key, claims), only_rsa), "an algorithm not accepted");
  // Signed by a key the set has not: the set may be out of date.
  const auto unknown = check_access_token(token_of(other, claims), keys, rules(), kNow);
  ASSERT_TRUE(std::holds_alternative<TokenRefusal>(unknown));
  EXPECT_TRUE(std::get<TokenRefusal>(unknown).unknown_key);
  EXPECT_EQ(refused(token_of(other, claims, {{"kid", "k1"}})), "a signature that does not hold");
  // A claim changed after signing.
  std::string token = token_of(key, claims);
  const auto first = token.find('.');
  const auto second = token.find('.', first + 1);
  json forged = claims;
  forged["sub"] = "admin";
  token.replace(first + 1, second - first - 1, encode_base64url(forged.dump()));
  EXPECT_EQ(refused(token), "a signature that does not hold");

  EXPECT_EQ(refused(token_of(key, (claims["iss"] = "https://evil.example", claims))),
            "another issuer");
  claims = good_claims();
  EXPECT_EQ(refused(token_of(key, (claims["aud"] = "https://other.example", claims))),
            "minted for another audience");
  claims["aud"] = {"https://other.example", "https://sb.example"};
  EXPECT_EQ(refused(token_of(key, claims)), "accepted");
  claims = good_claims();
  EXPECT_EQ(refused(token_of(key, (claims["exp"] = kNow - 61, claims))), "expired");
  EXPECT_EQ(refused(token_of(key, (claims["exp"] = kNow - 30, claims))), "accepted")
      << "within the clock skew";
  claims.erase("exp");
  EXPECT_EQ(refused(token_of(key, claims)), "no expiry");
  claims = good_claims();
  EXPECT_EQ(refused(token_of(key, (claims["nbf"] = kNow + 120, claims))), "not valid yet");
  claims = good_claims();
  claims.erase("sub");
  EXPECT_EQ(refused(token_of(key, claims)), "no sub claim naming the caller");
  EXPECT_EQ(refused("a.b"), "not a signed JWT");
  EXPECT_EQ(refused(std::string(kMaxTokenBytes + 1, 'a')), "not a signed JWT");
  EXPECT_EQ(refused(token_of(key, good_claims(), {{"crit", {"exp"}}})),
            "a critical header not understood");
}

TEST(AccessToken, TheIdentityClaimIsTheOneConfigured) {
  const SigningKey key = make_key(Algorithm::kEdDSA, "k1");
  TokenRules by_email = rules();
  by_email.identity_claim = "email";
  auto claims = good_claims();
  claims["email"] = "ops@example.com";
  const auto verdict = check_access_token(token_of(key, claims), key_set({&key}), by_email, kNow);
  ASSERT_TRUE(std::holds_alternative<TokenIdentity>(verdict)) << refusal(verdict);
  EXPECT_EQ(std::get<TokenIdentity>(verdict).identities,
            std::vector<std::string>{"ops@example.com"});
  EXPECT_EQ(std::get<TokenIdentity>(verdict).subject, "agent-7");
  EXPECT_EQ(claimed_issuer(token_of(key, claims)), "https://idp.example");
}

TEST(AccessToken, AnAudienceOfComputersURLsNarrowsTheToken) {
  const SigningKey key = make_key(Algorithm::kES256, "k1");
  auto paths_of = [&](const json& audience) -> std::string {
    auto claims = good_claims();
    claims["aud"] = audience;
    const auto verdict = check_access_token(token_of(key, claims), key_set({&key}), rules(), kNow);
    if (const auto* refused = std::get_if<TokenRefusal>(&verdict)) return refused->why;
    std::string out = "paths:";
    for (const auto& path : std::get<TokenIdentity>(verdict).resource_paths) out += " " + path;
    return out;
  };
  EXPECT_EQ(paths_of("https://sb.example/"), "paths:");
  EXPECT_EQ(paths_of("https://sb.example/mcp/alpha"), "paths: /mcp/alpha");
  EXPECT_EQ(paths_of("https://sb.example/mcp/alpha/"), "paths: /mcp/alpha");
  EXPECT_EQ(paths_of(json::array({"https://sb.example/mcp/alpha", "https://sb.example/mcp"})),
            "paths: /mcp/alpha /mcp");
  // Naming the whole switchboard too, it is for the whole switchboard.
  EXPECT_EQ(paths_of(json::array({"https://sb.example/mcp/alpha", "https://sb.example"})),
            "paths:");
  for (const char* elsewhere :
       {"https://sb.example.evil/mcp/alpha", "https://sb.example/mcp/a/b", "https://sb.example/x",
        "https://sb.example/mcp//", "https://sb.example/mcp/a?b", "https://sb.examplemcp/alpha"})
    EXPECT_EQ(paths_of(elsewhere), "minted for another audience") << elsewhere;
}

TEST(AccessToken, AnArrayIdentityClaimNamesEachOfItsStrings) {
  const SigningKey key = make_key(Algorithm::kES256, "k1");
  TokenRules by_groups = rules();
  by_groups.identity_claim = "groups";
  auto claims = good_claims();
  claims["groups"] = json::array({"ops", 7, "", "agents"});
  const auto verdict = check_access_token(token_of(key, claims), key_set({&key}), by_groups, kNow);
  ASSERT_TRUE(std::holds_alternative<TokenIdentity>(verdict)) << refusal(verdict);
  EXPECT_EQ(std::get<TokenIdentity>(verdict).identities,
            (std::vector<std::string>{"ops", "agents"}));
  // An empty array, one of no strings, or one past the bound names nobody.
  for (const json& groups : {json::array(), json::array({1, nullptr}),
                             json(std::vector<std::string>(kMaxIdentities + 1, "ops"))}) {
    claims["groups"] = groups;
    EXPECT_EQ(refusal(check_access_token(token_of(key, claims), key_set({&key}), by_groups, kNow)),
              "no groups claim naming the caller");
  }
}

TEST(AccessToken, AKeySetIsReadStrictly) {
  const SigningKey rsa = make_key(Algorithm::kRS256, "r");
  json jwks{{"keys", {rsa.jwk(), {{"kty", "oct"}, {"k", "c2VjcmV0"}}}}};
  auto read = read_key_set(jwks.dump());
  ASSERT_TRUE(std::holds_alternative<std::vector<PublicKey>>(read));
  EXPECT_EQ(std::get<std::vector<PublicKey>>(read).size(), 1u) << "a symmetric key is skipped";
  json short_rsa = rsa.jwk();
  short_rsa["n"] = encode_base64url(std::string(128, '\x7f'));
  EXPECT_EQ(std::get<std::string>(read_key_set(json{{"keys", {short_rsa}}}.dump())),
            "a malformed RSA key")
      << "a 1024-bit key is not taken";
  json mislabelled = rsa.jwk();
  mislabelled["alg"] = "ES256";
  EXPECT_EQ(std::get<std::string>(read_key_set(json{{"keys", {mislabelled}}}.dump())),
            "a key whose `alg` is not its kind's");
  EXPECT_EQ(std::get<std::string>(read_key_set("[]")), "no `keys` array");
  json many{{"keys", json::array()}};
  for (std::size_t i = 0; i <= kMaxKeys; ++i) many["keys"].push_back(rsa.jwk());
  EXPECT_EQ(std::get<std::string>(read_key_set(many.dump())), "more than 64 keys");
}

TEST(AccessToken, Base64urlIsReadStrictly) {
  EXPECT_EQ(decode_base64url("aGk"), "hi");
  EXPECT_FALSE(decode_base64url("aGk="));
  EXPECT_FALSE(decode_base64url("a+k"));
  EXPECT_FALSE(decode_base64url("a"));
  EXPECT_EQ(decode_base64url("-_8"), std::string("\xfb\xff", 2));
  EXPECT_EQ(encode_base64url(std::string("\xfb\xff", 2)), "-_8");
}

}  // namespace
}  // namespace sb::supervisor::oauth
