// What resources and prompts share under a caller's grant (docs/protocol.md, "Resources,
// prompts and completions"): a list narrowed to the items the grant allows, and one item
// (a resource read, a prompt got) forwarded only when it allows it, audited like a tool
// call; anything else answered as an unknown item, without reaching the computer.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "supervisor/audit/audit_log.hpp"
#include "supervisor/mcp/exchange.hpp"

namespace sb::supervisor {

// The caller's grant of one kind, as the shared handlers use it.
struct ItemGrant {
  bool any = false;  // anything at all
  bool all = false;  // every item: nothing to narrow
  // Holds what it needs: it may run when the computer answers, after the request is gone.
  std::function<bool(std::string_view name)> allows;
  std::uint32_t offer_bit = 0;  // what the computer must offer (ipc::offer::)
};

// `method`'s list of `member`, each item named by its `key` member ("uri", "name").
Underway granted_list(const Exchange& exchange, const ItemGrant& grant, std::string method,
                      std::string member, const char* key);

// One item `method` names by `params.<key>`, forwarded under `[timeouts] default_secs`
// when granted; `unknown` makes the answer for an item that is not there.
struct ItemRequest {
  std::string method;
  const char* key;
  CallKind kind;
  std::function<nlohmann::json(const nlohmann::json& id, const std::string& name)> unknown;
  bool may_arrive = false;  // the reply may be passed on while it arrives
};
Underway granted_item(const Exchange& exchange, const ItemGrant& grant, const ItemRequest& item);

}  // namespace sb::supervisor
