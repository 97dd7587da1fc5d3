// The reference a test and the fuzz target hold supervisor/call_scan.hpp to: whether a
// request, or its params, names a member twice. nlohmann's tree keeps the last of two and
// cannot show it, so its parser's events are watched instead. Inside arguments a repeat is
// the computer's to read: the switchboard forwards the caller's bytes there.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace sbtest {

// True when `text` parses and its top-level object or that object's "params" object names
// some member twice (keys compared decoded).
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
