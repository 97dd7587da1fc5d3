#include "supervisor/mcp/resources.hpp"

#include "ipc/offers.hpp"
#include "shared/jsonrpc.hpp"
#include "supervisor/mcp/granted_items.hpp"
#include "supervisor/mcp/listing.hpp"

namespace sb::supervisor {
namespace {

using json = nlohmann::json;

// Copied: a list's filter runs when the computer answers, after the request is gone.
ItemGrant resource_grant(const Exchange& exchange) {
  const config::UriPatterns& granted = exchange.context().resources;
  return ItemGrant{.any = granted.any(),
                   .all = granted.all,
                   .allows = [granted](std::string_view uri) { return granted.allows(uri); },
                   .offer_bit = ipc::offer::kResources};
}

}  // namespace

Underway resources_list(const Exchange& exchange) {
  return granted_list(exchange, resource_grant(exchange), "resources/list", "resources", "uri");
}

// A caller sees a template only when it may read every resource the template can name.
Underway resource_templates_list(const Exchange& exchange) {
  const config::UriPatterns& granted = exchange.context().resources;
  if (!granted.any() || !exchange.offered(ipc::offer::kResources))
    return empty_list(exchange, "resourceTemplates");
  ListFilter filter{.method = "resources/templates/list", .member = "resourceTemplates"};
  if (!granted.all) {
    filter.keep = [granted](const json& item) {
      const auto uri_template = item.is_object() ? item.find("uriTemplate") : item.end();
      return uri_template != item.end() && uri_template->is_string() &&
             granted.allows_template(uri_template->get_ref<const std::string&>());
    };
  }
  return relay_list(exchange, std::move(filter));
}

Underway resources_read(const Exchange& exchange) {
  return granted_item(exchange, resource_grant(exchange),
                      ItemRequest{.method = "resources/read",
                                  .key = "uri",
                                  .kind = CallKind::kResource,
                                  .unknown = unknown_resource,
                                  // A resource may be as large as any reply.
                                  .may_arrive = true});
}

json unknown_resource(const json& id, const std::string& uri) {
  json reply = jsonrpc::error_response(id, jsonrpc::kInvalidParams, "Resource not found");
  reply["error"]["data"] = json{{"uri", uri}};
  return reply;
}

}  // namespace sb::supervisor
