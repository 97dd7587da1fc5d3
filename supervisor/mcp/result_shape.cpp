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

// What only the 2026-07-28 revision has, taken out for a caller of an older one.
void strip_stateless_members(json& result) {
  for (const char* member : {"resultType", "ttlMs", "cacheScope"}) result.erase(member);
}

}  // namespace

json complete(json result, Era era) {
  if (!result.is_object()) return result;
  if (era == Era::kHandshake) {
    strip_stateless_members(result);
    return result;
  }
  const auto type = result.find("resultType");
  if (type == result.end() || !is_one_of(*type, {"complete", "input_required"}))
    result["resultType"] = "complete";
  return result;
}

void shape_list(json& result, bool narrowed, Era era) {
  if (!result.is_object()) return;
  if (era == Era::kHandshake) {
    strip_stateless_members(result);
    return;
  }
  // A list is never interim: whatever else a computer said, it is complete.
  result["resultType"] = "complete";
  const auto ttl = result.find("ttlMs");
  if (ttl == result.end() || !count_of_milliseconds(*ttl)) result["ttlMs"] = 0;
  const auto scope = result.find("cacheScope");
  if (narrowed || scope == result.end() || !is_one_of(*scope, {"public", "private"}))
    result["cacheScope"] = "private";
}

void shape_reply(std::string& reply_without_id, std::string_view method, Era era) {
  json reply = json::parse(reply_without_id, nullptr, /*allow_exceptions=*/false);
  if (!reply.is_object()) return;
  const auto result = reply.find("result");
  if (result == reply.end() || !result->is_object()) return;
  if (era == Era::kHandshake) {
    const std::size_t members = result->size();
    strip_stateless_members(*result);
    if (result->size() != members)
      reply_without_id = reply.dump(-1, ' ', false, json::error_handler_t::replace);
    return;
  }
  const bool asks = jsonrpc::may_be_input_required(method);
  const auto type = result->find("resultType");
  const bool type_allowed =
      type != result->end() &&
      (is_one_of(*type, {"complete"}) || (asks && is_one_of(*type, {"input_required"})) ||
       (method == "tools/call" && is_one_of(*type, {"task"})));
  bool changed = !type_allowed;
  if (!type_allowed) (*result)["resultType"] = "complete";
  if (method == "resources/read" && (*result)["resultType"] == "complete") {
    const auto ttl = result->find("ttlMs");
    const auto scope = result->find("cacheScope");
    const bool hinted = ttl != result->end() && count_of_milliseconds(*ttl) &&
                        scope != result->end() && is_one_of(*scope, {"public", "private"});
    if (!hinted) {
      shape_list(*result, /*narrowed=*/false, Era::kStateless);
      changed = true;
    }
  }
  if (changed) reply_without_id = reply.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace sb::supervisor
