#include "supervisor/oauth/keys.hpp"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/param_build.h>
#include <openssl/rsa.h>

#include <array>
#include <nlohmann/json.hpp>

#include "shared/text.hpp"

namespace sb::supervisor::oauth {
namespace {

using json = nlohmann::json;

struct KeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};

std::shared_ptr<EVP_PKEY> owned(EVP_PKEY* key) {
  return key ? std::shared_ptr<EVP_PKEY>(key, KeyFree{}) : nullptr;
}

// A key built from OpenSSL parameters of `type` ("RSA", "EC"); null when they make none.
std::shared_ptr<EVP_PKEY> key_from_params(const char* type, OSSL_PARAM_BLD* build) {
  OSSL_PARAM* params = OSSL_PARAM_BLD_to_param(build);
  EVP_PKEY_CTX* context = EVP_PKEY_CTX_new_from_name(nullptr, type, nullptr);
  EVP_PKEY* key = nullptr;
  if (!params || !context || EVP_PKEY_fromdata_init(context) != 1 ||
      EVP_PKEY_fromdata(context, &key, EVP_PKEY_PUBLIC_KEY, params) != 1)
    key = nullptr;
  EVP_PKEY_CTX_free(context);
  OSSL_PARAM_free(params);
  return owned(key);
}

// The bytes of a key member, base64url; none when it is missing or malformed.
std::optional<std::string> member_bytes(const json& jwk, const char* name) {
  const auto found = jwk.find(name);
  if (found == jwk.end() || !found->is_string()) return std::nullopt;
  return decode_base64url(found->get_ref<const std::string&>());
}

std::shared_ptr<EVP_PKEY> rsa_key(const json& jwk) {
  const auto n = member_bytes(jwk, "n");
  const auto e = member_bytes(jwk, "e");
  if (!n || !e || n->empty() || e->empty() || e->size() > 8) return nullptr;
  BIGNUM* modulus = BN_bin2bn(reinterpret_cast<const unsigned char*>(n->data()),
                              static_cast<int>(n->size()), nullptr);
  BIGNUM* exponent = BN_bin2bn(reinterpret_cast<const unsigned char*>(e->data()),
                               static_cast<int>(e->size()), nullptr);
  OSSL_PARAM_BLD* build = OSSL_PARAM_BLD_new();
  std::shared_ptr<EVP_PKEY> key;
  if (modulus && exponent && build &&
      OSSL_PARAM_BLD_push_BN(build, OSSL_PKEY_PARAM_RSA_N, modulus) == 1 &&
      OSSL_PARAM_BLD_push_BN(build, OSSL_PKEY_PARAM_RSA_E, exponent) == 1)
    key = key_from_params("RSA", build);
  OSSL_PARAM_BLD_free(build);
  BN_free(modulus);
  BN_free(exponent);
  if (key && EVP_PKEY_get_bits(key.get()) < kMinRsaBits) return nullptr;
  return key;
}

std::shared_ptr<EVP_PKEY> p256_key(const json& jwk) {
  if (jwk.value("crv", json()) != "P-256") return nullptr;
  const auto x = member_bytes(jwk, "x");
  const auto y = member_bytes(jwk, "y");
  if (!x || !y || x->size() != 32 || y->size() != 32) return nullptr;
  // The uncompressed point: 0x04, then x and y.
  std::string point = "\x04" + *x + *y;
  OSSL_PARAM_BLD* build = OSSL_PARAM_BLD_new();
  std::shared_ptr<EVP_PKEY> key;
  if (build &&
      OSSL_PARAM_BLD_push_utf8_string(build, OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0) == 1 &&
      OSSL_PARAM_BLD_push_octet_string(build, OSSL_PKEY_PARAM_PUB_KEY, point.data(),
                                       point.size()) == 1)
    key = key_from_params("EC", build);
  OSSL_PARAM_BLD_free(build);
  return key;
}

std::shared_ptr<EVP_PKEY> ed25519_key(const json& jwk) {
  if (jwk.value("crv", json()) != "Ed25519") return nullptr;
  const auto x = member_bytes(jwk, "x");
  if (!x || x->size() != 32) return nullptr;
  return owned(EVP_PKEY_new_raw_public_key(
      EVP_PKEY_ED25519, nullptr, reinterpret_cast<const unsigned char*>(x->data()), x->size()));
}

// Whether `key` is of the kind `algorithm` signs with.
bool key_fits(EVP_PKEY* key, Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::kRS256:
    case Algorithm::kPS256:
      return EVP_PKEY_is_a(key, "RSA") == 1;
    case Algorithm::kES256: {
      if (EVP_PKEY_is_a(key, "EC") != 1) return false;
      std::array<char, 32> group{};
      std::size_t length = 0;
      return EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, group.data(),
                                            group.size(), &length) == 1 &&
             std::string_view(group.data(), length) == "prime256v1";
    }
    case Algorithm::kEdDSA:
      return EVP_PKEY_is_a(key, "ED25519") == 1;
  }
  return false;
}

// ES256's signature is r and s side by side (RFC 7518 §3.4); OpenSSL verifies DER.
std::optional<std::string> der_of_p256_signature(std::string_view signature) {
  if (signature.size() != 64) return std::nullopt;
  const auto* bytes = reinterpret_cast<const unsigned char*>(signature.data());
  ECDSA_SIG* pair = ECDSA_SIG_new();
  BIGNUM* r = BN_bin2bn(bytes, 32, nullptr);
  BIGNUM* s = BN_bin2bn(bytes + 32, 32, nullptr);
  if (!pair || !r || !s || ECDSA_SIG_set0(pair, r, s) != 1) {
    BN_free(r);
    BN_free(s);
    ECDSA_SIG_free(pair);
    return std::nullopt;
  }
  unsigned char* der = nullptr;
  const int length = i2d_ECDSA_SIG(pair, &der);
  ECDSA_SIG_free(pair);
  if (length <= 0) return std::nullopt;
  std::string out(reinterpret_cast<const char*>(der), static_cast<std::size_t>(length));
  OPENSSL_free(der);
  return out;
}

}  // namespace

std::optional<Algorithm> algorithm_named(std::string_view name) {
  if (name == "RS256") return Algorithm::kRS256;
  if (name == "PS256") return Algorithm::kPS256;
  if (name == "ES256") return Algorithm::kES256;
  if (name == "EdDSA") return Algorithm::kEdDSA;
  return std::nullopt;
}

std::string_view name_of(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::kRS256:
      return "RS256";
    case Algorithm::kPS256:
      return "PS256";
    case Algorithm::kES256:
      return "ES256";
    case Algorithm::kEdDSA:
      return "EdDSA";
  }
  return "";
}

namespace {

// One entry of a key set: its key, nothing (a kind, use or algorithm not taken: skipped),
// or why it is refused.
std::variant<PublicKey, std::monostate, std::string> entry_of(const json& jwk) {
  if (!jwk.is_object()) return std::string("a key that is not an object");
  const json use = jwk.value("use", json("sig"));
  const json kty = jwk.value("kty", json());
  if (use != "sig" || !kty.is_string()) return std::monostate{};
  std::shared_ptr<EVP_PKEY> key;
  if (kty == "RSA") {
    key = rsa_key(jwk);
  } else if (kty == "EC" && jwk.value("crv", json()) == "P-256") {
    key = p256_key(jwk);
  } else if (kty == "OKP" && jwk.value("crv", json()) == "Ed25519") {
    key = ed25519_key(jwk);
  } else {
    return std::monostate{};  // a kind no accepted algorithm signs with
  }
  const json kid = jwk.value("kid", json(""));
  if (!key) return "a malformed " + kty.get<std::string>() + " key";
  if (!kid.is_string()) return std::string("a key whose `kid` is not a string");
  PublicKey entry{.kid = kid.get<std::string>(), .key = std::move(key)};
  if (const auto alg = jwk.find("alg"); alg != jwk.end()) {
    const auto named =
        alg->is_string() ? algorithm_named(alg->get_ref<const std::string&>()) : std::nullopt;
    if (!named) return std::monostate{};  // a key for an algorithm not accepted
    if (!key_fits(entry.key.get(), *named))
      return std::string("a key whose `alg` is not its kind's");
    entry.algorithm = named;
  }
  return entry;
}

}  // namespace

std::variant<PublicKey, std::string> read_key(const json& jwk) {
  auto entry = entry_of(jwk);
  if (auto* key = std::get_if<PublicKey>(&entry)) return std::move(*key);
  if (auto* why = std::get_if<std::string>(&entry)) return std::move(*why);
  return std::string("a key of a kind, use or algorithm not taken");
}

std::variant<std::vector<PublicKey>, std::string> read_key_set(std::string_view jwks_json) {
  const json document = json::parse(jwks_json, nullptr, /*allow_exceptions=*/false);
  const auto keys = document.is_object() ? document.find("keys") : document.end();
  if (keys == document.end() || !keys->is_array()) return std::string("no `keys` array");
  if (keys->size() > kMaxKeys) return "more than " + std::to_string(kMaxKeys) + " keys";
  std::vector<PublicKey> out;
  for (const json& jwk : *keys) {
    auto entry = entry_of(jwk);
    if (auto* why = std::get_if<std::string>(&entry)) return std::move(*why);
    if (auto* key = std::get_if<PublicKey>(&entry)) out.push_back(std::move(*key));
  }
  return out;
}

bool signature_holds(const PublicKey& key, Algorithm algorithm, std::string_view signing_input,
                     std::string_view signature) {
  if (!key.key || !key_fits(key.key.get(), algorithm)) return false;
  if (key.algorithm && *key.algorithm != algorithm) return false;
  std::string der;
  if (algorithm == Algorithm::kES256) {
    auto converted = der_of_p256_signature(signature);
    if (!converted) return false;
    der = std::move(*converted);
    signature = der;
  }
  EVP_MD_CTX* context = EVP_MD_CTX_new();
  EVP_PKEY_CTX* key_context = nullptr;
  const EVP_MD* digest = algorithm == Algorithm::kEdDSA ? nullptr : EVP_sha256();
  bool holds =
      context && EVP_DigestVerifyInit(context, &key_context, digest, nullptr, key.key.get()) == 1;
  if (holds && algorithm == Algorithm::kPS256) {
    holds = EVP_PKEY_CTX_set_rsa_padding(key_context, RSA_PKCS1_PSS_PADDING) == 1 &&
            EVP_PKEY_CTX_set_rsa_pss_saltlen(key_context, RSA_PSS_SALTLEN_DIGEST) == 1 &&
            EVP_PKEY_CTX_set_rsa_mgf1_md(key_context, EVP_sha256()) == 1;
  } else if (holds && algorithm == Algorithm::kRS256) {
    holds = EVP_PKEY_CTX_set_rsa_padding(key_context, RSA_PKCS1_PADDING) == 1;
  }
  holds =
      holds && EVP_DigestVerify(context, reinterpret_cast<const unsigned char*>(signature.data()),
                                signature.size(),
                                reinterpret_cast<const unsigned char*>(signing_input.data()),
                                signing_input.size()) == 1;
  EVP_MD_CTX_free(context);
  return holds;
}

}  // namespace sb::supervisor::oauth
