// Socket addresses as the file writes them (`listen`, `metrics_listen`), and the loopback
// rule they are held to.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sb::config {

struct SocketAddress {
  std::string ip;  // without brackets
  std::uint16_t port = 0;
  bool v6 = false;
};

std::optional<SocketAddress> parse_socket_address(std::string_view text);
bool is_loopback_ip(const std::string& ip);

}  // namespace sb::config
