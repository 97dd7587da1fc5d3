#include "supervisor/mcp/prompts.hpp"

#include "ipc/offers.hpp"
#include "shared/jsonrpc.hpp"
#include "supervisor/mcp/granted_items.hpp"

namespace sb::supervisor {
namespace {

using json = nlohmann::json;

// Copied: a list's filter runs when the computer answers, after the request is gone.
ItemGrant prompt_grant(const Exchange& exchange) {
  const config::NameList& granted = exchange.context().prompts;
  return ItemGrant{.any = granted.any(),
                   .all = granted.all,
                   .allows = [granted](std::string_view name) { return granted.allows(name); },
                   .offer_bit = ipc::offer::kPrompts};
}

}  // namespace

Underway prompts_list(const Exchange& exchange) {
  return granted_list(exchange, prompt_grant(exchange), "prompts/list", "prompts", "name");
}

Underway prompts_get(const Exchange& exchange) {
  return granted_item(exchange, prompt_grant(exchange),
                      ItemRequest{.method = "prompts/get",
                                  .key = "name",
                                  .kind = CallKind::kPrompt,
                                  .unknown = unknown_prompt});
}

json unknown_prompt(const json& id, const std::string& name) {
  json reply = jsonrpc::error_response(id, jsonrpc::kInvalidParams, "Prompt not found");
  reply["error"]["data"] = json{{"name", name}};
  return reply;
}

}  // namespace sb::supervisor
