#include "supervisor/mcp/completion.hpp"

#include "ipc/offers.hpp"
#include "shared/jsonrpc.hpp"
#include "supervisor/mcp/forward.hpp"
#include "supervisor/mcp/reply_text.hpp"
#include "supervisor/mcp/result_shape.hpp"

namespace sb::supervisor {
namespace {

using json = nlohmann::json;

// Whether params.ref names a prompt or a resource (template) the caller may use.
bool may_complete(const Exchange& exchange) {
  const json* params = exchange.params();
  if (!params) return false;
  const auto ref = params->find("ref");
  if (ref == params->end() || !ref->is_object()) return false;
  const json type = ref->value("type", json());
  if (type == "ref/prompt") {
    const json name = ref->value("name", json());
    return name.is_string() && exchange.context().prompts.allows(name.get<std::string>());
  }
  // A resource's is its template's: every URI it can name must be granted.
  if (type == "ref/resource") {
    const json uri = ref->value("uri", json());
    return uri.is_string() && exchange.context().resources.allows_template(uri.get<std::string>());
  }
  return false;
}

}  // namespace

Underway complete(const Exchange& exchange) {
  if (!may_complete(exchange) || !exchange.offered(ipc::offer::kCompletions)) {
    return exchange.finish(jsonrpc::result_response(
        exchange.id, complete(json{{"completion",
                                    {{"hasMore", false}, {"total", 0}, {"values", json::array()}}}},
                              exchange.context().era)));
  }
  CallRequest request =
      request_to_computer(exchange, "completion/complete", exchange.config().timeouts.control_secs);
  return forward(exchange, std::move(request),
                 [id = exchange.id](CallResult result) { return relayed(id, std::move(result)); });
}

}  // namespace sb::supervisor
