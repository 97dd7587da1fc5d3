// What the tests and fuzz targets of the JSON scanners (shared/json_scan.hpp) read from
// nlohmann::json, their reference, beyond its tree: how deep a value nests, and whether a
// request, or its params, names a member twice (the tree keeps the last of two and cannot
// show it, so the parser's events are watched instead).
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace sbtest {

// How deep containers nest: 1 for {} or [], 0 for a scalar.
inline int nesting_depth(const nlohmann::json& value) {
  if (!value.is_structured()) return 0;
  int deepest = 0;
  for (const auto& child : value) deepest = std::max(deepest, nesting_depth(child));
  return deepest + 1;
}

// True when `text` parses and its top-level object or that object's "params" object names
// some member twice (keys compared decoded). Inside arguments a repeat is the computer's to
// read: the switchboard forwards the caller's bytes there.
inline bool repeats_a_request_member(std::string_view text) {
  using json = nlohmann::json;
  std::vector<std::string> request_keys;
  std::vector<std::string> params_keys;
  bool in_params = false;
  bool repeated = false;
  const auto add = [&](std::vector<std::string>& keys, const std::string& key) {
    for (const auto& seen : keys) repeated |= seen == key;
    keys.push_back(key);
  };
  const json parsed = json::parse(
      text,
      [&](int depth, json::parse_event_t event, json& value) {
        // A top-level member's object value starts at depth 1; its keys come at depth 2.
        if (event == json::parse_event_t::object_start && depth == 1)
          in_params = !request_keys.empty() && request_keys.back() == "params";
        if (event == json::parse_event_t::key && depth == 1)
          add(request_keys, value.get<std::string>());
        if (event == json::parse_event_t::key && depth == 2 && in_params)
          add(params_keys, value.get<std::string>());
        return true;
      },
      /*allow_exceptions=*/false);
  return repeated && !parsed.is_discarded();
}

}  // namespace sbtest
