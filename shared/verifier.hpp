// Verifiers (sha256 digests of secrets), bearer parsing and constant-time lookup
// (docs/protocol.md, "Authentication").
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sb {

// A SHA-256 digest of a secret. The switchboard never holds a usable secret, only these.
struct Verifier {
  std::array<unsigned char, 32> digest{};
  friend bool operator==(const Verifier&, const Verifier&) = default;
};

// SHA-256 of the secret's bytes exactly as given.
Verifier verifier_of(std::string_view secret);

// Parses "sha256:<64 hex>" after trimming; throws std::invalid_argument saying what is wrong.
Verifier parse_verifier(std::string_view text);

// "sha256:" + 64 lowercase hex digits.
std::string render_verifier(const Verifier& verifier);

// Constant-time equality of two digests.
bool same_digest(const Verifier& a, const Verifier& b);

// Index of the first entry equal to `presented`, comparing against every entry with no
// early exit so that timing does not reveal which one matched.
std::optional<std::size_t> find_verifier(const std::vector<Verifier>& entries,
                                         const Verifier& presented);

// The token of an Authorization header value, or nothing (docs/protocol.md,
// "Authentication").
std::optional<std::string> parse_bearer(std::string_view header_value);
// The same for another scheme, `scheme` in lowercase ("dpop"): any case matches.
std::optional<std::string> parse_credentials(std::string_view header_value,
                                             std::string_view scheme);

// 32 bytes from the OS CSPRNG as 64 lowercase hex chars; throws std::runtime_error.
std::string generate_secret();

}  // namespace sb
