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

void rename(json& object, const char* from, const char* to) {
  const auto found = object.find(from);
  if (found == object.end()) return;
  json value = std::move(*found);
  object.erase(from);
  object[to] = std::move(value);
}

// A task as the handshake era has it (2025-11-25 `Task`), from either era's: the extension's
// members renamed, what only its tasks/get carries (the result, error or questions) left
// out, and `ttl`, which that revision requires, null when the computer gave none.
void to_handshake_task(json& task) {
  for (const char* member : {"result", "error", "inputRequests", "requestState", "resultType"})
    task.erase(member);
  rename(task, "ttlMs", "ttl");
  rename(task, "pollIntervalMs", "pollInterval");
  if (!task.contains("ttl")) task["ttl"] = nullptr;
}

// A task as the 2026-07-28 tasks extension has it, from either era's.
void to_stateless_task(json& task) {
  rename(task, "ttl", "ttlMs");
  rename(task, "pollInterval", "pollIntervalMs");
  if (const auto ttl = task.find("ttlMs"); ttl != task.end() && !count_of_milliseconds(*ttl))
    task.erase(ttl);
  if (const auto poll = task.find("pollIntervalMs");
      poll != task.end() && !count_of_milliseconds(*poll))
    task.erase(poll);
}

// A result that is a task for a caller of `era`: a created task (tools/call) nested under
// `task` in the handshake era, the task itself with `resultType: "task"` in 2026-07-28; a
// task's state (tasks/get), and tasks/cancel's answer (the task in the handshake era,
// nothing in 2026-07-28). Whether it changed anything.
bool shape_task(json& result, std::string_view method, Era era) {
  if (method == "tools/call") {
    const auto nested = result.find("task");
    if (era == Era::kHandshake && result.value("resultType", json()) == "task") {
      json meta = result.value("_meta", json());
      result.erase("_meta");
      to_handshake_task(result);
      json created{{"task", std::move(result)}};
      if (!meta.is_null()) created["_meta"] = std::move(meta);
      result = std::move(created);
      return true;
    }
    if (era == Era::kStateless && nested != result.end() && nested->is_object() &&
        !result.contains("resultType")) {
      json task = std::move(*nested);
      result.erase("task");
      to_stateless_task(task);
      for (auto& [member, value] : task.items()) result[member] = std::move(value);
      result["resultType"] = "task";
      return true;
    }
    return false;
  }
  if (method == "tasks/get" || (method == "tasks/cancel" && era == Era::kHandshake)) {
    const json before = result;
    if (era == Era::kHandshake)
      to_handshake_task(result);
    else
      to_stateless_task(result);
    return result != before;
  }
  if (method == "tasks/cancel" && result.size() > (result.contains("_meta") ? 1u : 0u) +
                                                      (result.contains("resultType") ? 1u : 0u)) {
    json meta = result.value("_meta", json());
    result = json::object();
    if (!meta.is_null()) result["_meta"] = std::move(meta);
    return true;
  }
  return false;
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
  bool changed = shape_task(*result, method, era);
  if (era == Era::kHandshake) {
    const std::size_t members = result->size();
    strip_stateless_members(*result);
    if (changed || result->size() != members)
      reply_without_id = reply.dump(-1, ' ', false, json::error_handler_t::replace);
    return;
  }
  const bool asks = jsonrpc::may_be_input_required(method);
  const auto type = result->find("resultType");
  const bool type_allowed =
      type != result->end() &&
      (is_one_of(*type, {"complete"}) || (asks && is_one_of(*type, {"input_required"})) ||
       (method == "tools/call" && is_one_of(*type, {"task"})));
  changed = changed || !type_allowed;
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
