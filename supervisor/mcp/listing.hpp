// Lists a computer answers and the switchboard narrows per caller (docs/protocol.md,
// "Resources, prompts and completions"): resources/list, resources/templates/list and
// prompts/list, and the cache scope of any list narrowed for one caller.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "supervisor/mcp/exchange.hpp"

namespace sb::supervisor {

struct ListFilter {
  std::string method;  // as sent to the computer
  std::string member;  // the result's array: "resources", "resourceTemplates", "prompts"
  // Which items the caller sees; empty: every one.
  std::function<bool(const nlohmann::json& item)> keep;
};

// Forwards the exchange's list request. The caller gets the items `keep` allows, in a
// result shaped as a list (result_shape.hpp), private when any could have been left out;
// the computer's error as it came; and an empty list when no computer is attached or its
// answer holds no list.
Underway relay_list(const Exchange& exchange, ListFilter filter);

// The switchboard's own empty list, for a caller granted nothing of the kind or a computer
// that offers none.
Underway empty_list(const Exchange& exchange, std::string_view member);

}  // namespace sb::supervisor
