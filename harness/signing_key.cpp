#include "harness/signing_key.hpp"

#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/rsa.h>

#include <stdexcept>

#include "shared/text.hpp"

namespace harness {
namespace {

using json = nlohmann::json;

std::string big_number(EVP_PKEY* key, const char* name) {
  BIGNUM* number = nullptr;
  EVP_PKEY_get_bn_param(key, name, &number);
  std::string out(static_cast<std::size_t>(BN_num_bytes(number)), '\0');
  BN_bn2bin(number, reinterpret_cast<unsigned char*>(out.data()));
  BN_free(number);
  return out;
}

bool is_rsa(std::string_view algorithm) {
  return algorithm == "RS256" || algorithm == "PS256";
}

json public_members(const SigningKey& signing) {
  EVP_PKEY* key = signing.key.get();
  if (is_rsa(signing.algorithm)) {
    return {{"kty", "RSA"},
            {"n", sb::encode_base64url(big_number(key, OSSL_PKEY_PARAM_RSA_N))},
            {"e", sb::encode_base64url(big_number(key, OSSL_PKEY_PARAM_RSA_E))}};
  }
  if (signing.algorithm == "ES256") {
    std::string point(65, '\0');
    std::size_t length = 0;
    EVP_PKEY_get_octet_string_param(key, OSSL_PKEY_PARAM_PUB_KEY,
                                    reinterpret_cast<unsigned char*>(point.data()), point.size(),
                                    &length);
    return {{"kty", "EC"},
            {"crv", "P-256"},
            {"x", sb::encode_base64url(point.substr(1, 32))},
            {"y", sb::encode_base64url(point.substr(33, 32))}};
  }
  std::string raw(32, '\0');
  std::size_t length = raw.size();
  EVP_PKEY_get_raw_public_key(key, reinterpret_cast<unsigned char*>(raw.data()), &length);
  return {{"kty", "OKP"}, {"crv", "Ed25519"}, {"x", sb::encode_base64url(raw)}};
}

// DER's ECDSA signature as JWS writes it: r and s side by side, 32 bytes each.
std::string raw_ecdsa(const std::string& der_signature) {
  const auto* der = reinterpret_cast<const unsigned char*>(der_signature.data());
  ECDSA_SIG* pair = d2i_ECDSA_SIG(nullptr, &der, static_cast<long>(der_signature.size()));
  std::string raw(64, '\0');
  BN_bn2binpad(ECDSA_SIG_get0_r(pair), reinterpret_cast<unsigned char*>(raw.data()), 32);
  BN_bn2binpad(ECDSA_SIG_get0_s(pair), reinterpret_cast<unsigned char*>(raw.data()) + 32, 32);
  ECDSA_SIG_free(pair);
  return raw;
}

}  // namespace

json SigningKey::jwk() const {
  json members = public_members(*this);
  if (!kid.empty()) members["kid"] = kid;
  return members;
}

std::string SigningKey::sign(std::string_view input) const {
  EVP_MD_CTX* context = EVP_MD_CTX_new();
  EVP_PKEY_CTX* key_context = nullptr;
  EVP_DigestSignInit(context, &key_context, algorithm == "EdDSA" ? nullptr : EVP_sha256(), nullptr,
                     key.get());
  if (algorithm == "PS256") {
    EVP_PKEY_CTX_set_rsa_padding(key_context, RSA_PKCS1_PSS_PADDING);
    EVP_PKEY_CTX_set_rsa_pss_saltlen(key_context, RSA_PSS_SALTLEN_DIGEST);
  }
  const auto* bytes = reinterpret_cast<const unsigned char*>(input.data());
  std::size_t length = 0;
  EVP_DigestSign(context, nullptr, &length, bytes, input.size());
  std::string signature(length, '\0');
  EVP_DigestSign(context, reinterpret_cast<unsigned char*>(signature.data()), &length, bytes,
                 input.size());
  signature.resize(length);
  EVP_MD_CTX_free(context);
  return algorithm == "ES256" ? raw_ecdsa(signature) : signature;
}

std::string SigningKey::compact_jws(json header, const json& claims) const {
  if (!header.contains("alg")) header["alg"] = algorithm;
  if (!header.contains("kid") && !kid.empty()) header["kid"] = kid;
  const std::string input =
      sb::encode_base64url(header.dump()) + "." + sb::encode_base64url(claims.dump());
  return input + "." + sb::encode_base64url(sign(input));
}

SigningKey make_signing_key(std::string_view algorithm, std::string kid) {
  EVP_PKEY* key = nullptr;
  if (is_rsa(algorithm)) {
    key = EVP_RSA_gen(2048);
  } else if (algorithm == "ES256") {
    key = EVP_EC_gen("P-256");
  } else if (algorithm == "EdDSA") {
    key = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
  } else {
    throw std::invalid_argument("no signing key for algorithm " + std::string(algorithm));
  }
  return SigningKey{std::string(algorithm), std::shared_ptr<EVP_PKEY>(key, EVP_PKEY_free),
                    std::move(kid)};
}

}  // namespace harness
