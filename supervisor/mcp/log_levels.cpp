#include "supervisor/mcp/log_levels.hpp"

#include <nlohmann/json.hpp>

#include "shared/jsonrpc.hpp"

namespace sb::supervisor {
namespace {

using json = nlohmann::json;

}  // namespace

std::string requested_log_level(const Exchange& exchange) {
  const json* level = exchange.meta_member("io.modelcontextprotocol/logLevel");
  if (!level || !level->is_string()) return {};
  const auto& name = level->get_ref<const std::string&>();
  return jsonrpc::log_severity(name) ? name : std::string();
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
  const auto at = jsonrpc::log_severity(level->get_ref<const std::string&>());
  const auto least = jsonrpc::log_severity(wanted);
  return at && least && *at >= *least;
}

}  // namespace sb::supervisor
