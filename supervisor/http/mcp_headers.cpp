#include "supervisor/http/mcp_headers.hpp"

#include <boost/beast/core/string.hpp>
#include <string_view>

namespace sb::supervisor {

namespace beast = boost::beast;

namespace {

constexpr std::string_view kParamPrefix = "mcp-param-";

bool is_param_header(std::string_view name) {
  return name.size() > kParamPrefix.size() &&
         beast::iequals(name.substr(0, kParamPrefix.size()), kParamPrefix);
}

bool is_mcp_header(std::string_view name) {
  return beast::iequals(name, "mcp-protocol-version") || beast::iequals(name, "mcp-method") ||
         beast::iequals(name, "mcp-name") || is_param_header(name);
}

}  // namespace

std::vector<std::pair<std::string, std::string>> mcp_params(const Request& request) {
  std::vector<std::pair<std::string, std::string>> params;
  for (const auto& field : request) {
    const std::string_view name(field.name_string().data(), field.name_string().size());
    if (!is_param_header(name)) continue;
    params.emplace_back(std::string(name.substr(kParamPrefix.size())),
                        std::string(field.value().data(), field.value().size()));
  }
  return params;
}

// Every request asks, so nothing is copied but MCP's own names, which are few.
std::optional<std::string> repeated_mcp_header(const Request& request) {
  std::vector<std::string_view> seen;
  for (const auto& field : request) {
    const std::string_view name(field.name_string().data(), field.name_string().size());
    if (!is_mcp_header(name)) continue;
    for (const std::string_view other : seen) {
      if (beast::iequals(other, name)) return std::string(name);
    }
    seen.push_back(name);
  }
  return std::nullopt;
}

}  // namespace sb::supervisor
