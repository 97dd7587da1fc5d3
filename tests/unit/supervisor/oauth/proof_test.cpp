// DPoP proofs (RFC 9449) checked as the switchboard checks one for a request (docs/auth.md,
// "Sender-constrained tokens"): a fresh proof by the client's key for this method, URL and
// token gives the key's thumbprint; one replayed, stale, for another request, or with
// a private key or an unusable one does not.
#include "supervisor/oauth/proof.hpp"

#include <openssl/sha.h>

#include <gtest/gtest.h>

#include <string>

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
constexpr std::string_view kUrl = "https://sb.example/mcp/alpha";
constexpr std::string_view kToken = "the.access.token";

std::string hash_of(std::string_view text) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  return encode_base64url(std::string_view(reinterpret_cast<const char*>(digest), sizeof digest));
}

json claims_for(std::string jti = "p-1") {
  return {{"htm", "POST"},
          {"htu", std::string(kUrl)},
          {"iat", kNow},
          {"jti", std::move(jti)},
          {"ath", hash_of(kToken)}};
}

std::string proof_of(const SigningKey& key, const json& claims, json header = json::object()) {
  if (!header.contains("typ")) header["typ"] = "dpop+jwt";
  if (!header.contains("jwk")) header["jwk"] = key.jwk();
  return key.compact_jws(std::move(header), claims);
}

std::string outcome(const std::variant<std::string, TokenRefusal>& verdict) {
  if (const auto* refusal = std::get_if<TokenRefusal>(&verdict)) return refusal->why;
  return "thumbprint";
}

TEST(DpopProof, AFreshProofGivesItsKeysThumbprintOnce) {
  for (const Algorithm algorithm : {Algorithm::kES256, Algorithm::kEdDSA, Algorithm::kRS256}) {
    const SigningKey key = make_key(algorithm, "");
    ProofReplays replays;
    const ProofRequest request{.method = "POST", .url = kUrl, .access_token = kToken};
    const std::string proof = proof_of(key, claims_for());
    const auto verdict = check_proof(proof, request, kNow, replays);
    ASSERT_EQ(outcome(verdict), "thumbprint") << name_of(algorithm);
    json public_jwk = key.jwk();
    public_jwk.erase("kid");
    EXPECT_EQ(std::get<std::string>(verdict), thumbprint_of(public_jwk));
    EXPECT_EQ(outcome(check_proof(proof, request, kNow + 1, replays)), "a DPoP proof already used");
  }
}

TEST(DpopProof, AProofForAnotherRequestOrTimeIsRefused) {
  const SigningKey key = make_key(Algorithm::kES256, "");
  ProofReplays replays;
  const ProofRequest request{.method = "POST", .url = kUrl, .access_token = kToken};
  const auto refused = [&](const json& claims, json header = json::object()) {
    return outcome(check_proof(proof_of(key, claims, std::move(header)), request, kNow, replays));
  };
  int n = 0;
  const auto fresh = [&] { return claims_for("p-" + std::to_string(++n)); };
  EXPECT_EQ(refused(fresh()), "thumbprint");
  json other = fresh();
  other["htm"] = "GET";
  EXPECT_EQ(refused(other), "a DPoP proof for another method");
  other = fresh();
  other["htu"] = "https://sb.example/mcp/beta";
  EXPECT_EQ(refused(other), "a DPoP proof for another URL");
  other = fresh();
  other["htu"] = std::string(kUrl) + "?query";
  EXPECT_EQ(refused(other), "thumbprint") << "the query is not compared";
  other = fresh();
  other["iat"] = kNow - 120;
  EXPECT_EQ(refused(other), "a DPoP proof outside its time window");
  other = fresh();
  other["ath"] = hash_of("another token");
  EXPECT_EQ(refused(other), "a DPoP proof for another access token");
  other = fresh();
  other.erase("jti");
  EXPECT_EQ(refused(other), "a DPoP proof without a jti");
  EXPECT_EQ(refused(fresh(), {{"typ", "JWT"}}), "a DPoP proof whose typ is not dpop+jwt");
  EXPECT_EQ(refused(fresh(), {{"alg", "HS256"}}), "a DPoP proof of an algorithm not accepted");
  json with_private = key.jwk();
  with_private["d"] = "AAAA";
  EXPECT_EQ(refused(fresh(), {{"jwk", with_private}}), "a DPoP proof without a public key");
  const SigningKey other_key = make_key(Algorithm::kES256, "");
  json foreign = other_key.jwk();
  foreign.erase("kid");
  EXPECT_EQ(refused(fresh(), {{"jwk", foreign}}), "a DPoP proof whose signature does not hold");
  EXPECT_EQ(outcome(check_proof("a.b", request, kNow, replays)),
            "a DPoP proof that is not a signed JWT");
}

TEST(DpopProof, TheReplayCacheIsBoundedAndForgetsWhatHasExpired) {
  ProofReplays replays(2);
  EXPECT_TRUE(replays.first_use("a", kNow + 60, kNow));
  EXPECT_FALSE(replays.first_use("a", kNow + 60, kNow + 30));
  EXPECT_TRUE(replays.first_use("a", kNow + 200, kNow + 61)) << "past its time, forgotten";
  EXPECT_TRUE(replays.first_use("b", kNow + 200, kNow + 61));
  EXPECT_TRUE(replays.first_use("c", kNow + 200, kNow + 61));
  EXPECT_TRUE(replays.first_use("a", kNow + 200, kNow + 62)) << "the oldest gave its place";
}

TEST(DpopProof, AThumbprintIsRfc7638s) {
  // RFC 7638 §3.1's example key and its thumbprint.
  const json jwk{{"kty", "RSA"},
                 {"n",
                  "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1"
                  "L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4"
                  "QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbO"
                  "pbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csF"
                  "Cur-kEgU8awapJzKnqDKgw"},
                 {"e", "AQAB"},
                 {"alg", "RS256"},
                 {"kid", "2011-04-29"}};
  EXPECT_EQ(thumbprint_of(jwk), "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs");
  EXPECT_EQ(thumbprint_of(json{{"kty", "oct"}, {"k", "x"}}), "");
}

}  // namespace
}  // namespace sb::supervisor::oauth
