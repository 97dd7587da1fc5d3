#include "supervisor/mcp/subscriptions.hpp"

#include "ipc/offers.hpp"
#include "shared/jsonrpc.hpp"
#include "supervisor/mcp/forward.hpp"
#include "supervisor/mcp/reply_text.hpp"
#include "supervisor/mcp/resources.hpp"
#include "supervisor/mcp/result_shape.hpp"
#include "supervisor/mcp/subscription_book.hpp"
#include "supervisor/metrics/metrics.hpp"

namespace sb::supervisor {
namespace {

using json = nlohmann::json;

Abandon answer_empty(const Exchange& exchange) {
  return exchange.finish(jsonrpc::result_response(exchange.id, complete(json::object())));
}

// The computer is no longer subscribed to `uri` for anyone: told so, and what it answers
// goes nowhere (no caller asked).
void unsubscribe_computer(const McpServices& services, const std::string& computer,
                          const std::string& caller, const std::string& uri,
                          std::chrono::seconds timeout) {
  services.workers.forward(computer,
                           CallRequest{.caller = caller,
                                       .timeout = timeout,
                                       .method = "resources/unsubscribe",
                                       .params_json = dump(json{{"uri", uri}})},
                           [](CallResult) {});
}

Subscriber subscriber_of(const Exchange& exchange) {
  return Subscriber{exchange.context().caller, exchange.context().mcp_session};
}

// The URI a subscribe or unsubscribe names, when the caller may use it: otherwise the
// answer was given (the same as for a resource that does not exist).
const std::string* usable_uri(const Exchange& exchange, const std::string& method) {
  const std::string* uri = exchange.params_string("uri");
  if (!uri) {
    exchange.finish(jsonrpc::error_response(exchange.id, jsonrpc::kInvalidParams,
                                            method + " needs params.uri"));
    return nullptr;
  }
  if (!exchange.context().resources.allows(*uri)) {
    exchange.finish(unknown_resource(exchange.id, *uri));
    return nullptr;
  }
  if (!exchange.offered(ipc::offer::kResourceSubscribe)) {
    exchange.finish(jsonrpc::error_response(
        exchange.id, jsonrpc::kMethodNotFound,
        "the computer " + backticked(exchange.context().computer) + " offers no subscriptions"));
    return nullptr;
  }
  return uri;
}

ReplyText not_attached(const json& id) {
  return relayed(id, CallResult{ipc::CallStatus::kNotAttached});
}

}  // namespace

Abandon resources_subscribe(const Exchange& exchange) {
  const std::string* uri = usable_uri(exchange, "resources/subscribe");
  if (!uri) return {};
  const auto session = attached_session(exchange.services().workers, exchange.context().computer);
  if (!session) {
    exchange.request.done(not_attached(exchange.id));
    return {};
  }
  SubscriptionBook& book = exchange.services().subscriptions;
  const Subscriber who = subscriber_of(exchange);
  switch (book.add(*session, *uri, who)) {
    case SubscriptionBook::Added::kFull:
      return exchange.finish(
          jsonrpc::error_response(exchange.id, jsonrpc::kInvalidRequest,
                                  "this caller holds " + std::to_string(book.held_by(who.caller)) +
                                      " subscriptions, its maximum ([limits] max_subscriptions)"));
    case SubscriptionBook::Added::kAnother:
    case SubscriptionBook::Added::kAlready:
      return answer_empty(exchange);
    case SubscriptionBook::Added::kFirst:
      break;
  }
  // The first subscriber subscribes the computer, and is taken back if it refuses.
  CallRequest request =
      request_to_computer(exchange, "resources/subscribe", exchange.config().timeouts.control_secs);
  return forward(
      exchange, std::move(request),
      [id = exchange.id, &book, session = *session, uri = *uri, who](CallResult result) {
        if (result.status != ipc::CallStatus::kReplied || result.kind == ipc::ReplyKind::kRpcError)
          book.remove(session, uri, who);
        return relayed(id, std::move(result));
      });
}

Abandon resources_unsubscribe(const Exchange& exchange) {
  const std::string* uri = usable_uri(exchange, "resources/unsubscribe");
  if (!uri) return {};
  const auto session = attached_session(exchange.services().workers, exchange.context().computer);
  if (!session ||
      !exchange.services().subscriptions.remove(*session, *uri, subscriber_of(exchange)))
    return answer_empty(exchange);
  CallRequest request = request_to_computer(exchange, "resources/unsubscribe",
                                            exchange.config().timeouts.control_secs);
  return forward(exchange, std::move(request),
                 [id = exchange.id](CallResult result) { return relayed(id, std::move(result)); });
}

std::optional<std::function<void()>> open_notification_stream(const McpServices& services,
                                                              std::chrono::seconds control_timeout,
                                                              const StreamKey& key,
                                                              StreamBoard::Sink sink) {
  const auto id = services.streams.open(key, std::move(sink));
  if (!id) return std::nullopt;
  return [&services, control_timeout, key, id = *id] {
    services.streams.close(key, id);
    const auto session = attached_session(services.workers, key.computer);
    if (!session) return;
    const Subscriber who{key.caller, key.mcp_session};
    for (const auto& uri : services.subscriptions.remove_all(*session, who))
      unsubscribe_computer(services, key.computer, key.caller, uri, control_timeout);
  };
}

void relay_resource_update(const McpServices& services, const std::string& computer,
                           const json& message, const std::string& body) {
  const auto params = message.find("params");
  const json uri =
      params != message.end() && params->is_object() ? params->value("uri", json()) : json();
  const auto session = attached_session(services.workers, computer);
  bool delivered = false;
  if (uri.is_string() && session) {
    for (const auto& who :
         services.subscriptions.subscribers(*session, uri.get_ref<const std::string&>())) {
      delivered |= services.streams.deliver({computer, who.caller, who.mcp_session}, body);
    }
  }
  if (!delivered) services.metrics.notification_dropped(computer);
}

}  // namespace sb::supervisor
