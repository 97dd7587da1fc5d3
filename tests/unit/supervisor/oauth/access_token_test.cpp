// OAuth access tokens checked as a resource server checks them (docs/auth.md, "What is
// checked"), with keys made here by OpenSSL for each algorithm accepted: a token signed by
// the issuer's key for this switchboard, and every way one may be wrong.
#include "supervisor/oauth/access_token.hpp"

#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace sb::supervisor::oauth {
namespace {

using json = nlohmann::json;

constexpr std::int64_t kNow = 1'800'000'000;

std::string base64url(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int size = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                   reinterpret_cast<const unsigned char*>(bytes.data()),
                                   static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(size));
  while (!out.empty() && out.back() == '=') out.pop_back();
  for (char& c : out) {
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  return out;
}

std::string bn_bytes(EVP_PKEY* key, const char* name) {
  BIGNUM* number = nullptr;
  EVP_PKEY_get_bn_param(key, name, &number);
  std::string out(static_cast<std::size_t>(BN_num_bytes(number)), '\0');
  BN_bn2bin(number, reinterpret_cast<unsigned char*>(out.data()));
  BN_free(number);
  return out;
}

// A key pair of the kind `algorithm` signs with, and its public half as a JWK.
struct SigningKey {
  Algorithm algorithm;
  std::shared_ptr<EVP_PKEY> key;
  std::string kid;

  json jwk() const {
    if (algorithm == Algorithm::kRS256 || algorithm == Algorithm::kPS256) {
      return {{"kty", "RSA"},
              {"kid", kid},
              {"n", base64url(bn_bytes(key.get(), OSSL_PKEY_PARAM_RSA_N))},
              {"e", base64url(bn_bytes(key.get(), OSSL_PKEY_PARAM_RSA_E))}};
    }
    if (algorithm == Algorithm::kES256) {
      std::string point(65, '\0');
      std::size_t length = 0;
      EVP_PKEY_get_octet_string_param(key.get(), OSSL_PKEY_PARAM_PUB_KEY,
                                      reinterpret_cast<unsigned char*>(point.data()), point.size(),
                                      &length);
      return {{"kty", "EC"},
              {"crv", "P-256"},
              {"kid", kid},
              {"x", base64url(point.substr(1, 32))},
              {"y", base64url(point.substr(33, 32))}};
    }
    std::string raw(32, '\0');
    std::size_t length = raw.size();
    EVP_PKEY_get_raw_public_key(key.get(), reinterpret_cast<unsigned char*>(raw.data()), &length);
    return {{"kty", "OKP"}, {"crv", "Ed25519"}, {"kid", kid}, {"x", base64url(raw)}};
  }

  std::string sign(std::string_view input) const {
    EVP_MD_CTX* context = EVP_MD_CTX_new();
    EVP_PKEY_CTX* key_context = nullptr;
    EVP_DigestSignInit(context, &key_context,
                       algorithm == Algorithm::kEdDSA ? nullptr : EVP_sha256(), nullptr, key.get());
    if (algorithm == Algorithm::kPS256) {
      EVP_PKEY_CTX_set_rsa_padding(key_context, RSA_PKCS1_PSS_PADDING);
      EVP_PKEY_CTX_set_rsa_pss_saltlen(key_context, RSA_PSS_SALTLEN_DIGEST);
    }
    std::size_t length = 0;
    EVP_DigestSign(context, nullptr, &length, reinterpret_cast<const unsigned char*>(input.data()),
                   input.size());
    std::string signature(length, '\0');
    EVP_DigestSign(context, reinterpret_cast<unsigned char*>(signature.data()), &length,
                   reinterpret_cast<const unsigned char*>(input.data()), input.size());
    signature.resize(length);
    EVP_MD_CTX_free(context);
    if (algorithm != Algorithm::kES256) return signature;
    // DER to r and s side by side, 32 bytes each.
    const auto* der = reinterpret_cast<const unsigned char*>(signature.data());
    ECDSA_SIG* pair = d2i_ECDSA_SIG(nullptr, &der, static_cast<long>(signature.size()));
    std::string raw(64, '\0');
    BN_bn2binpad(ECDSA_SIG_get0_r(pair), reinterpret_cast<unsigned char*>(raw.data()), 32);
    BN_bn2binpad(ECDSA_SIG_get0_s(pair), reinterpret_cast<unsigned char*>(raw.data()) + 32, 32);
    ECDSA_SIG_free(pair);
    return raw;
  }
};

SigningKey make_key(Algorithm algorithm, std::string kid) {
  EVP_PKEY* key = nullptr;
  switch (algorithm) {
    case Algorithm::kRS256:
    case Algorithm::kPS256:
      key = EVP_RSA_gen(2048);
      break;
    case Algorithm::kES256:
      key = EVP_EC_gen("P-256");
      break;
    case Algorithm::kEdDSA:
      key = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
      break;
  }
  return SigningKey{algorithm, std::shared_ptr<EVP_PKEY>(key, EVP_PKEY_free), std::move(kid)};
}

TokenRules rules() {
  return TokenRules{
      .issuer = "https://idp.example",
      .audiences = {"https://sb.example"},
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
  if (!header.contains("alg")) header["alg"] = std::string(name_of(key.algorithm));
  if (!header.contains("typ")) header["typ"] = "at+jwt";
  if (!header.contains("kid")) header["kid"] = key.kid;
  const std::string input = base64url(header.dump()) + "." + base64url(claims.dump());
  return input + "." + base64url(key.sign(input));
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
    EXPECT_EQ(identity->identity, "agent-7");
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
  token.replace(first + 1, second - first - 1, base64url(forged.dump()));
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
  EXPECT_EQ(std::get<TokenIdentity>(verdict).identity, "ops@example.com");
  EXPECT_EQ(std::get<TokenIdentity>(verdict).subject, "agent-7");
  EXPECT_EQ(claimed_issuer(token_of(key, claims)), "https://idp.example");
}

TEST(AccessToken, AKeySetIsReadStrictly) {
  const SigningKey rsa = make_key(Algorithm::kRS256, "r");
  json jwks{{"keys", {rsa.jwk(), {{"kty", "oct"}, {"k", "c2VjcmV0"}}}}};
  auto read = read_key_set(jwks.dump());
  ASSERT_TRUE(std::holds_alternative<std::vector<PublicKey>>(read));
  EXPECT_EQ(std::get<std::vector<PublicKey>>(read).size(), 1u) << "a symmetric key is skipped";
  json short_rsa = rsa.jwk();
  short_rsa["n"] = base64url(std::string(128, '\x7f'));
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
}

}  // namespace
}  // namespace sb::supervisor::oauth
