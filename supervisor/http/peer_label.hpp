// The peer label shown in status and audit (docs/protocol.md, "Peer label"): a forwarded
// identity when there is a usable one, then the socket address. Shown, never trusted.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace sb::supervisor {

std::string peer_label(const std::optional<std::string_view>& tailscale_user_login,
                       const std::optional<std::string_view>& forwarded_for,
                       std::string_view socket_address);

}  // namespace sb::supervisor
