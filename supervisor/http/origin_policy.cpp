#include "supervisor/http/origin_policy.hpp"

#include <algorithm>
#include <array>
#include <cctype>

#include "shared/text.hpp"

namespace sb::supervisor {

bool loopback_origin(std::string_view origin) {
  std::string_view rest;
  if (origin.starts_with("http://")) {
    rest = origin.substr(7);
  } else if (origin.starts_with("https://")) {
    rest = origin.substr(8);
  } else {
    return false;
  }
  constexpr std::array<std::string_view, 3> kHosts{"localhost", "127.0.0.1", "[::1]"};
  return std::any_of(kHosts.begin(), kHosts.end(), [&](std::string_view host) {
    if (!rest.starts_with(host)) return false;
    const std::string_view port = rest.substr(host.size());
    return port.empty() || (port.size() >= 2 && port.size() <= 6 && port.front() == ':' &&
                            all_digits(port.substr(1)));
  });
}

bool origin_allowed(const config::Config& config, std::string_view origin) {
  if (loopback_origin(origin)) return true;
  return std::find(config.allowed_origins.begin(), config.allowed_origins.end(), origin) !=
         config.allowed_origins.end();
}

std::vector<std::pair<std::string, std::string>> cors_headers(std::string_view origin) {
  return {{"Access-Control-Allow-Origin", std::string(origin)},
          {"Access-Control-Expose-Headers", "Mcp-Session-Id"},
          {"Vary", "Origin"}};
}

HttpResponse preflight_response(std::string_view origin) {
  HttpResponse response = empty_response(204);
  response.headers = cors_headers(origin);
  response.headers.emplace_back("Access-Control-Allow-Methods", "POST, GET, DELETE, OPTIONS");
  response.headers.emplace_back("Access-Control-Allow-Headers",
                                "Authorization, Content-Type, Accept, Mcp-Session-Id, "
                                "MCP-Protocol-Version, Mcp-Method, Mcp-Name, Last-Event-ID");
  response.headers.emplace_back("Access-Control-Max-Age", "600");
  return response;
}

HttpResponse forbidden_origin_response() {
  return text_response(403, "origin not allowed; an operator can list it in allowed_origins");
}

}  // namespace sb::supervisor
