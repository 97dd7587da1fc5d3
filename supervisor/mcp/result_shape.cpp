#include "supervisor/mcp/result_shape.hpp"

namespace sb::supervisor {

using json = nlohmann::json;

json complete(json result) {
  if (result.is_object() && !result.contains("resultType")) result["resultType"] = "complete";
  return result;
}

void shape_list(json& result, bool narrowed) {
  if (!result.is_object()) return;
  if (!result.contains("resultType")) result["resultType"] = "complete";
  const auto ttl = result.find("ttlMs");
  if (ttl == result.end() || !ttl->is_number_unsigned()) result["ttlMs"] = 0;
  if (narrowed || !result.contains("cacheScope")) result["cacheScope"] = "private";
}

}  // namespace sb::supervisor
