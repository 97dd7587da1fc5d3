#include "supervisor/config/addresses.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

namespace sb::config {
namespace {

std::optional<std::uint16_t> parse_port(std::string_view text) {
  if (text.empty() || text.size() > 5) return std::nullopt;
  unsigned value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<unsigned>(c - '0');
  }
  if (value > 65535) return std::nullopt;
  return static_cast<std::uint16_t>(value);
}

bool is_ipv4(const std::string& text, in_addr* out = nullptr) {
  in_addr scratch{};
  return inet_pton(AF_INET, text.c_str(), out ? out : &scratch) == 1;
}

bool is_ipv6(const std::string& text, in6_addr* out = nullptr) {
  in6_addr scratch{};
  return inet_pton(AF_INET6, text.c_str(), out ? out : &scratch) == 1;
}

}  // namespace

// IPv4 "a.b.c.d:p" or IPv6 "[addr]:p"; never a hostname (resolving one at bind time would
// make the loopback rule depend on DNS).
std::optional<SocketAddress> parse_socket_address(std::string_view text) {
  SocketAddress out;
  std::string_view port;
  if (text.starts_with('[')) {
    const auto close = text.find("]:");
    if (close == std::string_view::npos) return std::nullopt;
    out.ip = std::string(text.substr(1, close - 1));
    out.v6 = true;
    port = text.substr(close + 2);
    if (!is_ipv6(out.ip)) return std::nullopt;
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos) return std::nullopt;
    out.ip = std::string(text.substr(0, colon));
    port = text.substr(colon + 1);
    if (!is_ipv4(out.ip)) return std::nullopt;
  }
  const auto number = parse_port(port);
  if (!number) return std::nullopt;
  out.port = *number;
  return out;
}

// 127.0.0.0/8 or ::1. The unspecified addresses (0.0.0.0, ::) are not loopback.
bool is_loopback_ip(const std::string& ip) {
  in_addr v4{};
  if (is_ipv4(ip, &v4)) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  return is_ipv6(ip, &v6) && IN6_IS_ADDR_LOOPBACK(&v6);
}

}  // namespace sb::config
