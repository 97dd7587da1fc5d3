// An issuer's public keys, read from its JSON Web Key Set (RFC 7517) into OpenSSL keys, and
// the one check made with them: a JWS signature (RFC 7515) by one of the algorithms an
// access token may be signed with (docs/auth.md, "What is checked"). Written on OpenSSL 3
// alone: Debian's JOSE library has no EdDSA, which OpenSSL has.
#pragma once

#include <openssl/evp.h>

#include <cstddef>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace sb::supervisor::oauth {

// Asymmetric only: never `none`, never HMAC, whose key would be the public one.
enum class Algorithm { kRS256, kPS256, kES256, kEdDSA };

std::optional<Algorithm> algorithm_named(std::string_view name);
std::string_view name_of(Algorithm algorithm);

struct PublicKey {
  std::string kid;                     // "" when the set names none
  std::optional<Algorithm> algorithm;  // the key's own `alg`, when it names one
  std::shared_ptr<EVP_PKEY> key;
};

// What a key set may hold at most; more is refused whole.
inline constexpr std::size_t kMaxKeys = 64;
// RSA keys shorter than this are not taken (RFC 7518 §3.3 asks for 2048 at least).
inline constexpr int kMinRsaBits = 2048;

// The signing keys of a JWKS document: RSA, EC on P-256 and Ed25519 keys whose `use` is
// "sig" or absent. A key of another kind is skipped; a malformed document, or a key of a
// supported kind that is malformed, is refused with the reason.
std::variant<std::vector<PublicKey>, std::string> read_key_set(std::string_view jwks_json);

// The signing key one JWK is (as a key set's entry would be read), or why not: a key of a
// kind or algorithm not taken, a malformed one, or one whose use is not "sig".
std::variant<PublicKey, std::string> read_key(const nlohmann::json& jwk);

// Whether `signature` is `algorithm`'s signature of `signing_input` by `key`: false for a
// key of another kind (an RSA key for ES256, a P-256 key for EdDSA, ...).
bool signature_holds(const PublicKey& key, Algorithm algorithm, std::string_view signing_input,
                     std::string_view signature);

}  // namespace sb::supervisor::oauth
