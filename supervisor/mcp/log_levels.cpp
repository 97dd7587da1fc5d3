#include "supervisor/mcp/log_levels.hpp"

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>

namespace sb::supervisor {
namespace {

using json = nlohmann::json;

// MCP's levels, least severe first (RFC 5424's, in its order).
constexpr std::array<std::string_view, 8> kLevels{"debug", "info",     "notice", "warning",
                                                  "error", "critical", "alert",  "emergency"};

// The level's place in kLevels, or kLevels.size() for none of them.
std::size_t severity(std::string_view level) {
  return static_cast<std::size_t>(std::find(kLevels.begin(), kLevels.end(), level) -
                                  kLevels.begin());
}

}  // namespace

std::string requested_log_level(const Exchange& exchange) {
  const json* level = exchange.meta_member("io.modelcontextprotocol/logLevel");
  if (!level || !level->is_string()) return {};
  const auto& name = level->get_ref<const std::string&>();
  return severity(name) < kLevels.size() ? name : std::string();
}

bool stateless_caller_takes(std::string_view message, std::string_view wanted) {
  // Only a log message pays for a parse.
  if (message.find("notifications/message") == std::string_view::npos) return true;
  const json parsed = json::parse(message, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object() || parsed.value("method", json()) != "notifications/message") return true;
  if (wanted.empty()) return false;
  const auto params = parsed.find("params");
  if (params == parsed.end() || !params->is_object()) return false;
  const auto level = params->find("level");
  if (level == params->end() || !level->is_string()) return false;
  const std::size_t at = severity(level->get_ref<const std::string&>());
  return at < kLevels.size() && at >= severity(wanted);
}

}  // namespace sb::supervisor
