// An issuer's signing key, made by OpenSSL, for tests and benchmarks of callers' access
// tokens (docs/auth.md): a key pair of the kind a JOSE algorithm signs with, its public
// half as a JWK, and compact JWS signed by it.
#pragma once

#include <openssl/evp.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace harness {

struct SigningKey {
  std::string algorithm;  // the JWS `alg`: RS256, PS256, ES256 or EdDSA
  std::shared_ptr<EVP_PKEY> key;
  std::string kid;

  // The public half as a JWK, with `kid` when there is one.
  nlohmann::json jwk() const;
  // The JWS signature of `input` (for ES256, r and s side by side, as JWS writes it).
  std::string sign(std::string_view input) const;
  // A compact JWS of `claims` with `header` (`alg` and `kid` added when missing).
  std::string compact_jws(nlohmann::json header, const nlohmann::json& claims) const;
};

// A new key pair for `algorithm` (RS256 and PS256: RSA 2048; ES256: P-256; EdDSA: Ed25519).
SigningKey make_signing_key(std::string_view algorithm, std::string kid);

}  // namespace harness
