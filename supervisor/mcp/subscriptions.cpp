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

Underway answer_empty(const Exchange& exchange) {
  return exchange.finish(
      jsonrpc::result_response(exchange.id, complete(json::object(), exchange.context().era)));
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
  if (uri->size() > kMaxSubscriptionUriBytes) {
    exchange.finish(jsonrpc::error_response(
        exchange.id, jsonrpc::kInvalidParams,
        method + ": a URI over " + std::to_string(kMaxSubscriptionUriBytes) + " bytes"));
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

// What of a listen's filter the switchboard honours: changes to the lists the caller sees
// that the computer announces.
struct ListenFilter {
  bool tools = false;
  bool prompts = false;
};

bool asks(const json& filter, const char* key) {
  const auto found = filter.find(key);
  return found != filter.end() && *found == true;
}

ListenFilter honoured_filter(const Exchange& exchange, const json& filter) {
  return ListenFilter{
      .tools = asks(filter, "toolsListChanged") && exchange.offered(ipc::offer::kToolsListChanged),
      .prompts = asks(filter, "promptsListChanged") && exchange.context().prompts.any() &&
                 exchange.offered(ipc::offer::kPromptsListChanged)};
}

// A message for a listen stream, tagged with its subscription id; none when its filter
// did not ask for it. A resource's update reaches only the streams subscribed to it.
std::optional<std::string> for_listener(const std::string& message, const ListenFilter& honoured,
                                        const std::string& subscription_id) {
  json parsed = json::parse(message, nullptr, false);
  if (!parsed.is_object()) return std::nullopt;
  const json method = parsed.value("method", json());
  if (method == "notifications/tools/list_changed" && !honoured.tools) return std::nullopt;
  if (method == "notifications/prompts/list_changed" && !honoured.prompts) return std::nullopt;
  json& params = parsed["params"];
  if (!params.is_object()) params = json::object();
  json& meta = params["_meta"];
  if (!meta.is_object()) meta = json::object();
  meta["io.modelcontextprotocol/subscriptionId"] = subscription_id;
  return dump(parsed);
}

// The computer is subscribed to `uri` for its first subscriber, who is taken back if it
// refuses; what it answers goes nowhere else (no caller waits for it).
void subscribe_computer(const McpServices& services, const SessionKey& session,
                        const std::string& uri, const Subscriber& who,
                        std::chrono::seconds timeout) {
  services.workers.forward(
      session.computer,
      CallRequest{.caller = who.caller,
                  .timeout = timeout,
                  .method = "resources/subscribe",
                  .params_json = dump(json{{"uri", uri}})},
      [&book = services.subscriptions, session, uri, who](CallResult result) {
        if (result.status != ipc::CallStatus::kReplied || result.kind == ipc::ReplyKind::kRpcError)
          book.remove(session, uri, who);
      });
}

// The listen's `resourceSubscriptions` its grant allows, subscribed as resources/subscribe
// subscribes, within the caller's max_subscriptions: the URIs honoured.
json subscribe_listener(const Exchange& exchange, const json& filter, const Subscriber& who) {
  json honoured = json::array();
  const auto uris = filter.find("resourceSubscriptions");
  if (uris == filter.end() || !uris->is_array() ||
      !exchange.offered(ipc::offer::kResourceSubscribe))
    return honoured;
  const McpServices& services = exchange.services();
  const auto session = attached_session(services.workers, exchange.context().computer);
  if (!session) return honoured;
  for (const json& uri : *uris) {
    if (!uri.is_string() || uri.get_ref<const std::string&>().size() > kMaxSubscriptionUriBytes ||
        !exchange.context().resources.allows(uri.get_ref<const std::string&>()))
      continue;
    const std::string& text = uri.get_ref<const std::string&>();
    switch (services.subscriptions.add(*session, text, who)) {
      case SubscriptionBook::Added::kFull:
        continue;
      case SubscriptionBook::Added::kFirst:
        subscribe_computer(services, *session, text, who,
                           std::chrono::seconds(exchange.config().timeouts.control_secs));
        break;
      case SubscriptionBook::Added::kAnother:
      case SubscriptionBook::Added::kAlready:
        break;
    }
    honoured.push_back(uri);
  }
  return honoured;
}

json acknowledgement(const ListenFilter& honoured, const json& uris,
                     const std::string& subscription_id) {
  json notifications = json::object();
  if (honoured.tools) notifications["toolsListChanged"] = true;
  if (honoured.prompts) notifications["promptsListChanged"] = true;
  if (!uris.empty()) notifications["resourceSubscriptions"] = uris;
  return json{{"jsonrpc", "2.0"},
              {"method", "notifications/subscriptions/acknowledged"},
              {"params",
               {{"notifications", std::move(notifications)},
                {"_meta", {{"io.modelcontextprotocol/subscriptionId", subscription_id}}}}}};
}

}  // namespace

Underway resources_subscribe(const Exchange& exchange) {
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

Underway resources_unsubscribe(const Exchange& exchange) {
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

void lapse_streamless_subscriptions(const McpServices& services, std::chrono::seconds window,
                                    std::chrono::seconds control_timeout) {
  const auto has_stream = [&streams = services.streams](const std::string& computer,
                                                        const Subscriber& who) {
    return streams.is_open({computer, who.caller, who.mcp_session});
  };
  const auto lapsed =
      services.subscriptions.lapse_streamless(has_stream, std::chrono::steady_clock::now(), window);
  for (const auto& gone : lapsed) {
    for (const auto& uri : gone.unsubscribed)
      unsubscribe_computer(services, gone.computer, gone.who.caller, uri, control_timeout);
  }
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

void relay_list_change(const McpServices& services, const std::string& computer,
                       const std::string& body) {
  if (services.streams.broadcast(computer, body) == 0)
    services.metrics.notification_dropped(computer);
}

Underway subscriptions_listen(const Exchange& exchange) {
  const json* params = exchange.params();
  const auto filter = params ? params->find("notifications") : json::const_iterator();
  if (!params || filter == params->end() || !filter->is_object()) {
    return exchange.finish(jsonrpc::error_response(
        exchange.id, jsonrpc::kInvalidParams, "subscriptions/listen needs params.notifications"));
  }
  if (!exchange.request.on_message) {
    return exchange.finish(jsonrpc::error_response(
        exchange.id, jsonrpc::kInvalidRequest,
        "subscriptions/listen answers with an event stream: Accept must list text/event-stream"));
  }
  const std::string subscription_id =
      exchange.id.is_string() ? exchange.id.get<std::string>() : exchange.id.dump();
  if (subscription_id.size() > kMaxListenIdBytes) {
    return exchange.finish(jsonrpc::error_response(
        exchange.id, jsonrpc::kInvalidParams,
        "a subscriptions/listen id names every notification of its stream: at most " +
            std::to_string(kMaxListenIdBytes) + " bytes"));
  }
  const CallerContext& context = exchange.context();
  std::string listen_session(kListenSession);
  listen_session += subscription_id;
  const StreamKey key{context.computer, context.caller, listen_session};
  const ListenFilter honoured = honoured_filter(exchange, *filter);
  auto ended = open_notification_stream(
      exchange.services(), std::chrono::seconds(exchange.config().timeouts.control_secs), key,
      [send = exchange.request.on_message, honoured, subscription_id](std::string message) {
        if (auto tagged = for_listener(message, honoured, subscription_id))
          send(ReplyText{.body = std::move(*tagged)});
      });
  if (!ended) {
    const StreamBoard& streams = exchange.services().streams;
    const std::string message =
        streams.full(context.caller)
            ? "this caller holds " + std::to_string(streams.held_by(context.caller)) +
                  " event streams open, its maximum ([limits] max_streams_per_caller)"
            : "a subscriptions/listen with this id is open for this caller already";
    return exchange.finish(jsonrpc::error_response(exchange.id, jsonrpc::kInvalidRequest, message));
  }
  const json uris =
      subscribe_listener(exchange, *filter, Subscriber{context.caller, listen_session});
  exchange.request.on_message(
      ReplyText{.body = dump(acknowledgement(honoured, uris, subscription_id))});
  return Underway{.abandon = std::move(*ended)};
}

}  // namespace sb::supervisor
