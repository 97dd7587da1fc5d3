// Keys made by OpenSSL for the OAuth tests (tests/unit/supervisor/oauth/): a key pair of
// each accepted algorithm's kind, its public half as a JWK, and JWS signatures by it.
#pragma once

#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "supervisor/oauth/keys.hpp"

namespace sb::supervisor::oauth::test {

using json = nlohmann::json;

inline std::string bn_bytes(EVP_PKEY* key, const char* name) {
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
              {"n", encode_base64url(bn_bytes(key.get(), OSSL_PKEY_PARAM_RSA_N))},
              {"e", encode_base64url(bn_bytes(key.get(), OSSL_PKEY_PARAM_RSA_E))}};
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
              {"x", encode_base64url(point.substr(1, 32))},
              {"y", encode_base64url(point.substr(33, 32))}};
    }
    std::string raw(32, '\0');
    std::size_t length = raw.size();
    EVP_PKEY_get_raw_public_key(key.get(), reinterpret_cast<unsigned char*>(raw.data()), &length);
    return {{"kty", "OKP"}, {"crv", "Ed25519"}, {"kid", kid}, {"x", encode_base64url(raw)}};
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

inline SigningKey make_key(Algorithm algorithm, std::string kid) {
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

}  // namespace sb::supervisor::oauth::test
