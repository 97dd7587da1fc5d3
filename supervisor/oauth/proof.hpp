// A DPoP proof (RFC 9449): the JWT a caller signs with its own key for one request, by which
// a sender-constrained access token proves it is presented by the client it was issued to
// (docs/auth.md, "Sender-constrained tokens"). A proof names the request (method and URL),
// its time, a unique id, the hash of the token it goes with, and the public key that
// signed it, whose thumbprint the token's `cnf.jkt` must be.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>

#include "supervisor/oauth/access_token.hpp"

namespace sb::supervisor::oauth {

// How far a proof's `iat` may be from now, either way.
inline constexpr std::chrono::seconds kProofWindow{60};
// A proof longer than this is refused unread.
inline constexpr std::size_t kMaxProofBytes = 8 * 1024;

// The proofs seen, by their key's thumbprint and `jti`, each for as long as it could still
// be presented; at most `capacity`, the oldest forgotten first (a proof then that old is
// past its window anyway unless the cache is flooded, which costs its flooder only).
class ProofReplays {
 public:
  explicit ProofReplays(std::size_t capacity = 16384) : capacity_(capacity) {}
  // True the first time `id` is seen (remembered until `until`); false for a replay.
  bool first_use(const std::string& id, std::int64_t until, std::int64_t now);

 private:
  std::size_t capacity_;
  std::unordered_map<std::string, std::int64_t> seen_;
  std::deque<std::string> order_;  // oldest first
};

struct ProofRequest {
  std::string_view method;        // the HTTP method, as received
  std::string_view url;           // the switchboard's public URL of the request, no query
  std::string_view access_token;  // the token the proof goes with
};

// The proof checked for `request` at `now`: the thumbprint (RFC 7638) of the key that
// signed it, or why not.
std::variant<std::string, TokenRefusal> check_proof(std::string_view proof,
                                                    const ProofRequest& request, std::int64_t now,
                                                    ProofReplays& replays);

// The JWK thumbprint (RFC 7638) of a public JWK: base64url SHA-256 of its required members
// in order; "" for a key of a kind not taken.
std::string thumbprint_of(const nlohmann::json& jwk);

}  // namespace sb::supervisor::oauth
