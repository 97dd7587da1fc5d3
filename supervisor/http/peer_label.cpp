#include "supervisor/http/peer_label.hpp"

#include "shared/text.hpp"

namespace sb::supervisor {
namespace {

constexpr std::size_t kMaxIdentity = 128;

bool visible_ascii(std::string_view text) {
  for (unsigned char c : text) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

std::optional<std::string> usable(std::optional<std::string_view> value) {
  if (!value || !visible_ascii(*value)) return std::nullopt;
  const std::string_view trimmed = trim(*value);
  if (trimmed.empty()) return std::nullopt;
  return std::string(trimmed.substr(0, kMaxIdentity));
}

}  // namespace

std::string peer_label(const std::optional<std::string_view>& tailscale_user_login,
                       const std::optional<std::string_view>& forwarded_for,
                       std::string_view socket_address) {
  std::optional<std::string> identity = usable(tailscale_user_login);
  if (!identity && forwarded_for) {
    const std::string_view first = forwarded_for->substr(0, forwarded_for->find(','));
    identity = usable(first);
  }
  if (!identity) return std::string(socket_address);
  return *identity + " via " + std::string(socket_address);
}

}  // namespace sb::supervisor
