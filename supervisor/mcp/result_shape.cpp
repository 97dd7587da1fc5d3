#include "supervisor/mcp/result_shape.hpp"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace sb::supervisor {

using json = nlohmann::json;

namespace {

bool is_one_of(const json& value, std::initializer_list<std::string_view> allowed) {
  if (!value.is_string()) return false;
  const auto& text = value.get_ref<const std::string&>();
  return std::find(allowed.begin(), allowed.end(), text) != allowed.end();
}

// A whole number, not below 0 (parsed, it is unsigned; built, it may be signed).
bool count_of_milliseconds(const json& value) {
  return value.is_number_unsigned() ||
         (value.is_number_integer() && value.get<std::int64_t>() >= 0);
}

}  // namespace

json complete(json result) {
  if (!result.is_object()) return result;
  const auto type = result.find("resultType");
  if (type == result.end() || !is_one_of(*type, {"complete", "input_required"}))
    result["resultType"] = "complete";
  return result;
}

void shape_list(json& result, bool narrowed) {
  if (!result.is_object()) return;
  // A list is never interim: whatever else a computer said, it is complete.
  result["resultType"] = "complete";
  const auto ttl = result.find("ttlMs");
  if (ttl == result.end() || !count_of_milliseconds(*ttl)) result["ttlMs"] = 0;
  const auto scope = result.find("cacheScope");
  if (narrowed || scope == result.end() || !is_one_of(*scope, {"public", "private"}))
    result["cacheScope"] = "private";
}

}  // namespace sb::supervisor
