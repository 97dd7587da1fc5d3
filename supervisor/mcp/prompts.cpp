#include "supervisor/mcp/prompts.hpp"

#include <chrono>
#include <memory>

#include "ipc/offers.hpp"
#include "shared/jsonrpc.hpp"
#include "supervisor/mcp/call_audit.hpp"
#include "supervisor/mcp/forward.hpp"
#include "supervisor/mcp/listing.hpp"

namespace sb::supervisor {

using json = nlohmann::json;

Abandon prompts_list(const Exchange& exchange) {
  const config::NameList& granted = exchange.context().prompts;
  if (!granted.any() || !exchange.offered(ipc::offer::kPrompts))
    return empty_list(exchange, "prompts");
  ListFilter filter{.method = "prompts/list", .member = "prompts"};
  if (!granted.all) {
    filter.keep = [granted](const json& item) {
      const auto name = item.is_object() ? item.find("name") : item.end();
      return name != item.end() && name->is_string() &&
             granted.allows(name->get_ref<const std::string&>());
    };
  }
  return relay_list(exchange, std::move(filter));
}

Abandon prompts_get(const Exchange& exchange) {
  const std::string* name = exchange.params_string("name");
  if (!name) {
    return exchange.finish(jsonrpc::error_response(exchange.id, jsonrpc::kInvalidParams,
                                                   "prompts/get needs params.name"));
  }
  const CallerContext& context = exchange.context();
  CallAudit audit{.services = exchange.services(),
                  .principal = context.caller,
                  .computer = context.computer,
                  .tool = *name,
                  .kind = CallKind::kPrompt,
                  .args = nullptr,
                  .started = std::chrono::steady_clock::now()};
  if (!context.prompts.allows(*name) || !exchange.offered(ipc::offer::kPrompts)) {
    audit.write("denied", std::nullopt, 0);
    return exchange.finish(unknown_prompt(exchange.id, *name));
  }
  CallRequest request =
      request_to_computer(exchange, "prompts/get", exchange.config().timeouts.default_secs);
  audit.forwarded = true;
  auto shared_audit = std::make_shared<const CallAudit>(std::move(audit));
  return forward(
      exchange, std::move(request),
      [id = exchange.id, shared_audit](CallResult result) {
        return audited_reply(id, std::move(result), shared_audit);
      },
      [shared_audit](std::string_view outcome) { shared_audit->write(outcome, std::nullopt, 0); });
}

json unknown_prompt(const json& id, const std::string& name) {
  json reply = jsonrpc::error_response(id, jsonrpc::kInvalidParams, "Prompt not found");
  reply["error"]["data"] = json{{"name", name}};
  return reply;
}

}  // namespace sb::supervisor
