// Fuzz target: an OAuth access token and its issuer's key set as the switchboard reads them
// (supervisor/oauth/access_token.hpp, keys.hpp), both from outside: a token anyone can send,
// a JWKS document from an issuer's server.
//
// Input: the JWKS document, a NUL, the token. Checked: a key set is read or refused whole
// and within its bound; a token is accepted only with an identity and an expiry not past;
// base64url text that reads encodes back to itself.
#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>

#include "fuzz/fuzz_check.hpp"
#include "shared/text.hpp"
#include "supervisor/oauth/access_token.hpp"

namespace oauth = sb::supervisor::oauth;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const auto nul = input.find('\0');
  const std::string jwks = input.substr(0, nul);
  const std::string token = nul == std::string::npos ? "" : input.substr(nul + 1);

  auto read = oauth::read_key_set(jwks);
  std::vector<oauth::PublicKey> keys;
  if (auto* read_keys = std::get_if<std::vector<oauth::PublicKey>>(&read)) {
    FUZZ_CHECK(read_keys->size() <= oauth::kMaxKeys);
    for (const auto& key : *read_keys) FUZZ_CHECK(key.key != nullptr);
    keys = std::move(*read_keys);
  }
  const oauth::TokenRules rules{.issuer = "https://idp.example",
                                .resource = "https://sb.example",
                                .algorithms = {oauth::Algorithm::kRS256, oauth::Algorithm::kPS256,
                                               oauth::Algorithm::kES256, oauth::Algorithm::kEdDSA}};
  constexpr std::int64_t kNow = 1'800'000'000;
  const auto verdict = oauth::check_access_token(token, keys, rules, kNow);
  if (const auto* identity = std::get_if<oauth::TokenIdentity>(&verdict)) {
    FUZZ_CHECK(!identity->identities.empty());
    FUZZ_CHECK(identity->expires_at + 60 > kNow);
    FUZZ_CHECK(identity->issuer == rules.issuer);
  }
  (void)oauth::claimed_issuer(token);
  if (const auto bytes = sb::decode_base64url(token)) FUZZ_CHECK(bytes->size() <= token.size());
  return 0;
}
