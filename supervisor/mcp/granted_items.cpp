#include "supervisor/mcp/granted_items.hpp"

#include <chrono>
#include <memory>

#include "shared/jsonrpc.hpp"
#include "supervisor/mcp/call_audit.hpp"
#include "supervisor/mcp/forward.hpp"
#include "supervisor/mcp/listing.hpp"

namespace sb::supervisor {

using json = nlohmann::json;

Underway granted_list(const Exchange& exchange, const ItemGrant& grant, std::string method,
                      std::string member, const char* key) {
  if (!grant.any || !exchange.offered(grant.offer_bit)) return empty_list(exchange, member);
  ListFilter filter{.method = std::move(method), .member = std::move(member)};
  if (!grant.all) {
    filter.keep = [allows = grant.allows, key](const json& item) {
      const auto name = item.is_object() ? item.find(key) : item.end();
      return name != item.end() && name->is_string() && allows(name->get_ref<const std::string&>());
    };
  }
  return relay_list(exchange, std::move(filter));
}

Underway granted_item(const Exchange& exchange, const ItemGrant& grant, const ItemRequest& item) {
  const std::string* name = exchange.params_string(item.key);
  if (!name) {
    return exchange.finish(jsonrpc::error_response(exchange.id, jsonrpc::kInvalidParams,
                                                   item.method + " needs params." + item.key));
  }
  const CallerContext& context = exchange.context();
  CallAudit audit{.services = exchange.services(),
                  .principal = context.caller,
                  .oauth_issuer = context.oauth_issuer,
                  .oauth_subject = context.oauth_subject,
                  .trace_id = context.trace_id,
                  .span_id = context.span_id,
                  .computer = context.computer,
                  .tool = *name,
                  .kind = item.kind,
                  .args = nullptr,
                  .started = std::chrono::steady_clock::now()};
  if (!grant.allows(*name) || !exchange.offered(grant.offer_bit)) {
    audit.write("denied", std::nullopt, 0);
    return exchange.finish(item.unknown(exchange.id, *name), "policy");
  }
  CallRequest request =
      request_to_computer(exchange, item.method, exchange.config().timeouts.default_secs);
  request.reply_may_arrive = context.reply_may_arrive && item.may_arrive;
  audit.forwarded = true;
  auto shared_audit = std::make_shared<const CallAudit>(std::move(audit));
  return forward(
      exchange, std::move(request),
      [id = exchange.id, shared_audit](CallResult result) {
        return audited_reply(id, std::move(result), shared_audit);
      },
      [shared_audit](std::string_view outcome) { shared_audit->write(outcome, std::nullopt, 0); });
}

}  // namespace sb::supervisor
