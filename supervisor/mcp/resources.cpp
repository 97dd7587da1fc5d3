#include "supervisor/mcp/resources.hpp"

#include <chrono>
#include <memory>

#include "ipc/offers.hpp"
#include "shared/jsonrpc.hpp"
#include "supervisor/mcp/call_audit.hpp"
#include "supervisor/mcp/forward.hpp"
#include "supervisor/mcp/listing.hpp"

namespace sb::supervisor {

using json = nlohmann::json;

Abandon resources_list(const Exchange& exchange) {
  const config::UriPatterns& granted = exchange.context().resources;
  if (!granted.any() || !exchange.offered(ipc::offer::kResources))
    return empty_list(exchange, "resources");
  ListFilter filter{.method = "resources/list", .member = "resources"};
  if (!granted.all) {
    filter.keep = [granted](const json& item) {
      const auto uri = item.is_object() ? item.find("uri") : item.end();
      return uri != item.end() && uri->is_string() &&
             granted.allows(uri->get_ref<const std::string&>());
    };
  }
  return relay_list(exchange, std::move(filter));
}

// A template names no one resource, so only a caller that may read every one sees them.
Abandon resource_templates_list(const Exchange& exchange) {
  if (!exchange.context().resources.all || !exchange.offered(ipc::offer::kResources))
    return empty_list(exchange, "resourceTemplates");
  return relay_list(
      exchange, ListFilter{.method = "resources/templates/list", .member = "resourceTemplates"});
}

Abandon resources_read(const Exchange& exchange) {
  const std::string* uri = exchange.params_string("uri");
  if (!uri) {
    return exchange.finish(jsonrpc::error_response(exchange.id, jsonrpc::kInvalidParams,
                                                   "resources/read needs params.uri"));
  }
  const CallerContext& context = exchange.context();
  CallAudit audit{.services = exchange.services(),
                  .principal = context.caller,
                  .computer = context.computer,
                  .tool = *uri,
                  .kind = CallKind::kResource,
                  .args = nullptr,
                  .started = std::chrono::steady_clock::now()};
  if (!context.resources.allows(*uri) || !exchange.offered(ipc::offer::kResources)) {
    audit.write("denied", std::nullopt, 0);
    return exchange.finish(unknown_resource(exchange.id, *uri));
  }
  CallRequest request =
      request_to_computer(exchange, "resources/read", exchange.config().timeouts.default_secs);
  request.reply_may_arrive = context.reply_may_arrive;  // a resource may be as large as any reply
  audit.forwarded = true;
  auto shared_audit = std::make_shared<const CallAudit>(std::move(audit));
  return forward(
      exchange, std::move(request),
      [id = exchange.id, shared_audit](CallResult result) {
        return audited_reply(id, std::move(result), shared_audit);
      },
      [shared_audit](std::string_view outcome) { shared_audit->write(outcome, std::nullopt, 0); });
}

json unknown_resource(const json& id, const std::string& uri) {
  json reply = jsonrpc::error_response(id, jsonrpc::kInvalidParams, "Resource not found");
  reply["error"]["data"] = json{{"uri", uri}};
  return reply;
}

}  // namespace sb::supervisor
