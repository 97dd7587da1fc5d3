#include "supervisor/oauth/proof.hpp"

#include <openssl/sha.h>

#include <array>
#include <nlohmann/json.hpp>

#include "shared/text.hpp"

namespace sb::supervisor::oauth {
namespace {

using json = nlohmann::json;

std::string sha256_base64url(std::string_view text) {
  std::array<unsigned char, SHA256_DIGEST_LENGTH> digest{};
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest.data());
  return encode_base64url(
      std::string_view(reinterpret_cast<const char*>(digest.data()), digest.size()));
}

TokenRefusal refused(std::string why) {
  return TokenRefusal{"a DPoP proof " + why};
}

// The URL without its query and fragment (RFC 9449 §4.3).
std::string_view without_query(std::string_view url) {
  return url.substr(0, url.find_first_of("?#"));
}

}  // namespace

bool ProofReplays::first_use(const std::string& id, std::int64_t until, std::int64_t now) {
  if (const auto found = seen_.find(id); found != seen_.end() && found->second >= now) return false;
  seen_[id] = until;
  order_.push_back(id);
  while (order_.size() > capacity_) {
    seen_.erase(order_.front());
    order_.pop_front();
  }
  return true;
}

std::string thumbprint_of(const json& jwk) {
  const json kty = jwk.value("kty", json());
  std::vector<const char*> members;
  if (kty == "RSA") members = {"e", "kty", "n"};
  if (kty == "EC") members = {"crv", "kty", "x", "y"};
  if (kty == "OKP") members = {"crv", "kty", "x"};
  if (members.empty()) return {};
  json required = json::object();
  for (const char* member : members) {
    const auto value = jwk.find(member);
    if (value == jwk.end() || !value->is_string()) return {};
    required[member] = *value;
  }
  // nlohmann keeps an object's members sorted and writes no whitespace: RFC 7638's form.
  return sha256_base64url(required.dump());
}

std::variant<std::string, TokenRefusal> check_proof(std::string_view proof,
                                                    const ProofRequest& request, std::int64_t now,
                                                    ProofReplays& replays) {
  if (proof.size() > kMaxProofBytes) return refused("too long");
  const auto parts = split_compact_jws(proof, kMaxProofBytes);
  if (!parts) return refused("that is not a signed JWT");
  const json header = decoded_object(parts->header);
  const json claims = decoded_object(parts->payload);
  if (header.is_null() || claims.is_null()) return refused("that is not JSON");
  if (header.value("typ", json()) != "dpop+jwt") return refused("whose typ is not dpop+jwt");
  const json alg = header.value("alg", json());
  const auto algorithm =
      alg.is_string() ? algorithm_named(alg.get_ref<const std::string&>()) : std::nullopt;
  if (!algorithm) return refused("of an algorithm not accepted");
  const json jwk = header.value("jwk", json());
  if (!jwk.is_object() || jwk.contains("d") || jwk.contains("p") || jwk.contains("k"))
    return refused("without a public key");
  const std::string thumbprint = thumbprint_of(jwk);
  const auto key = read_key(jwk);
  const auto* read = std::get_if<PublicKey>(&key);
  if (thumbprint.empty() || !read) return refused("with an unusable key");
  const auto signature = decode_base64url(parts->signature);
  if (!signature || !signature_holds(*read, *algorithm, parts->signing_input, *signature))
    return refused("whose signature does not hold");
  if (claims.value("htm", json()) != std::string(request.method))
    return refused("for another method");
  const json htu = claims.value("htu", json());
  if (!htu.is_string() ||
      without_query(htu.get_ref<const std::string&>()) != without_query(request.url))
    return refused("for another URL");
  const json iat = claims.value("iat", json());
  if (!iat.is_number()) return refused("without iat");
  const double issued = iat.get<double>();
  if (!(issued > double(now - kProofWindow.count()) && issued < double(now + kProofWindow.count())))
    return refused("outside its time window");
  if (claims.value("ath", json()) != sha256_base64url(request.access_token))
    return refused("for another access token");
  const json jti = claims.value("jti", json());
  if (!jti.is_string() || jti.get_ref<const std::string&>().empty() ||
      jti.get_ref<const std::string&>().size() > 256)
    return refused("without a jti");
  if (!replays.first_use(thumbprint + ":" + jti.get<std::string>(),
                         static_cast<std::int64_t>(issued) + kProofWindow.count(), now))
    return refused("already used");
  return thumbprint;
}

}  // namespace sb::supervisor::oauth
