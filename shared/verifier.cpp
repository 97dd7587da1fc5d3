#include "shared/verifier.hpp"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <stdexcept>

#include "shared/text.hpp"

namespace sb {
namespace {

constexpr std::string_view kPrefix = "sha256:";

// "Visible ASCII" for a header value (docs/protocol.md, "Authentication"): printable
// characters plus horizontal tab. A tab is therefore kept (it does not split the scheme from
// the token, and is trimmed at the ends), while any other control or non-ASCII byte makes
// the header carry no token.
bool visible_ascii(std::string_view text) {
  for (unsigned char c : text) {
    if ((c < 0x20 && c != '\t') || c > 0x7e) return false;
  }
  return true;
}

}  // namespace

Verifier verifier_of(std::string_view secret) {
  Verifier out;
  SHA256(reinterpret_cast<const unsigned char*>(secret.data()), secret.size(), out.digest.data());
  return out;
}

Verifier parse_verifier(std::string_view text) {
  text = trim(text);
  if (!text.starts_with(kPrefix)) {
    throw std::invalid_argument(
        "a verifier must start with `sha256:`; make one with `switchboard hash` or "
        "`switchboard gen-secret`");
  }
  const std::string_view hex = text.substr(kPrefix.size());
  if (hex.size() % 2 != 0) {
    throw std::invalid_argument("the verifier is not hex (odd number of digits)");
  }
  for (char c : hex) {
    if (hex_digit_value(c) < 0) throw std::invalid_argument("the verifier is not hex");
  }
  Verifier out;
  if (hex.size() != out.digest.size() * 2) {
    throw std::invalid_argument("the verifier must be 32 bytes (64 hex chars)");
  }
  for (std::size_t i = 0; i < out.digest.size(); ++i) {
    out.digest[i] = static_cast<unsigned char>(hex_digit_value(hex[2 * i]) * 16 +
                                               hex_digit_value(hex[2 * i + 1]));
  }
  return out;
}

std::string render_verifier(const Verifier& verifier) {
  return std::string(kPrefix) + to_hex(verifier.digest.data(), verifier.digest.size());
}

bool same_digest(const Verifier& a, const Verifier& b) {
  return CRYPTO_memcmp(a.digest.data(), b.digest.data(), a.digest.size()) == 0;
}

std::optional<std::size_t> find_verifier(const std::vector<Verifier>& entries,
                                         const Verifier& presented) {
  std::optional<std::size_t> found;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    // No early exit: every entry is compared whatever matched before.
    const bool match = same_digest(entries[i], presented);
    if (match && !found) found = i;
  }
  return found;
}

std::optional<std::string> parse_bearer(std::string_view header_value) {
  return parse_credentials(header_value, "bearer");
}

std::optional<std::string> parse_credentials(std::string_view header_value,
                                             std::string_view wanted) {
  if (!visible_ascii(header_value)) return std::nullopt;
  const std::string_view value = trim(header_value);
  const auto space = value.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  const std::string_view scheme = value.substr(0, space);
  if (scheme.size() != wanted.size()) return std::nullopt;
  for (std::size_t i = 0; i < scheme.size(); ++i) {
    const char lower = (scheme[i] >= 'A' && scheme[i] <= 'Z') ? char(scheme[i] + 32) : scheme[i];
    if (lower != wanted[i]) return std::nullopt;
  }
  const std::string_view token = trim(value.substr(space + 1));
  if (token.empty()) return std::nullopt;
  return std::string(token);
}

std::string generate_secret() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof bytes) != 1) {
    throw std::runtime_error("OS entropy unavailable: could not draw 32 random bytes");
  }
  return to_hex(bytes, sizeof bytes);
}

}  // namespace sb
