// Session's subscriptions toward a computer that speaks only 2026-07-28 (session.hpp;
// docs/protocol.md, "Subscriptions"). That revision has no resources/subscribe, and sends
// list changes only to whoever asked: a client names what it follows in a
// `subscriptions/listen`, which stays open. So the worker keeps the URIs the supervisor
// subscribed and one listen open for all of them and for the list changes the computer
// offers (from the moment it is ready). A change sends a new listen; the computer
// acknowledges it, and then the subscribe or unsubscribe that asked is answered and the
// listen before it cancelled. Updates are taken from the acknowledged listen alone, so
// none is delivered twice, and none is lost between the two.
#include <utility>

#include "shared/jsonrpc.hpp"
#include "worker/session.hpp"
#include "worker/stateless_revision.hpp"

namespace sb::worker {
namespace {

constexpr std::string_view kSubscriptionIdKey = "io.modelcontextprotocol/subscriptionId";

// The listen a message from the computer names in its `_meta`, or 0 when it names none of
// the worker's (the worker's listen ids are numbers).
std::uint64_t listen_named(const json& message) {
  const auto params = message.find("params");
  if (params == message.end() || !params->is_object()) return 0;
  const auto meta = params->find("_meta");
  if (meta == params->end() || !meta->is_object()) return 0;
  const auto id = meta->find(kSubscriptionIdKey);
  return id != meta->end() && id->is_number_unsigned() ? id->get<std::uint64_t>() : 0;
}

// The message without the worker's subscription id, which means nothing to a caller.
void forget_listen(json& message) {
  json& meta = message["params"]["_meta"];
  meta.erase(kSubscriptionIdKey);
  if (meta.empty()) message["params"].erase("_meta");
}

}  // namespace

bool Session::keeps_listen(const ForwardedCall& forwarded) const {
  return (offers_ & ipc::offer::kStatelessOnly) &&
         (forwarded.method == "resources/subscribe" || forwarded.method == "resources/unsubscribe");
}

void Session::change_listen(ForwardedCall forwarded) {
  const bool subscribe = forwarded.method == "resources/subscribe";
  const json params = json::parse(forwarded.params_json, nullptr, /*allow_exceptions=*/false);
  const auto uri = params.is_object() ? params.find("uri") : params.end();
  if (uri == params.end() || !uri->is_string()) {
    return reply_written(forwarded.call_id,
                         jsonrpc::error_response(nullptr, jsonrpc::kInvalidParams,
                                                 forwarded.method + " needs params.uri"));
  }
  const std::string& text = uri->get_ref<const std::string&>();
  if (text.empty() || text.size() > ipc::kMaxListenUriBytes) {
    return reply_written(forwarded.call_id,
                         jsonrpc::error_response(nullptr, jsonrpc::kInvalidParams,
                                                 forwarded.method + ": a URI out of bounds"));
  }
  const auto empty_result = jsonrpc::result_response(nullptr, json::object());
  if (subscribe == listened_uris_.contains(text))
    return reply_written(forwarded.call_id, empty_result);
  if (subscribe && listened_uris_.size() >= ipc::kMaxParkedListenUris) {
    return reply_written(
        forwarded.call_id,
        jsonrpc::error_response(nullptr, jsonrpc::kInvalidRequest,
                                "the computer is subscribed to as many resources as a "
                                "worker follows (" +
                                    std::to_string(ipc::kMaxParkedListenUris) + ")"));
  }
  const auto undo = [this, subscribe, text] {
    subscribe ? listened_uris_.erase(text) : listened_uris_.insert(text).second;
  };
  subscribe ? listened_uris_.insert(text).second : listened_uris_.erase(text);
  if (!wants_listen()) {
    end_listen(std::exchange(active_listen_, 0));
    newest_listen_ = 0;
    return reply_written(forwarded.call_id, empty_result);
  }
  // The listen waits for its acknowledgement as a call waits for its reply: under the
  // subscribe's deadline and in its caller's share.
  PendingCall call{.call_id = forwarded.call_id,
                   .caller = std::move(forwarded.caller),
                   .timeout = forwarded.timeout,
                   .last_moment = std::chrono::steady_clock::now() + forwarded.max_total};
  const auto id = pending_.add(std::move(call), forwarded.caller_cap);
  if (!id) {
    undo();
    return reply_status(forwarded.call_id, ipc::CallStatus::kOverloaded);
  }
  arm_deadline(*id, forwarded.timeout);
  send_listen(*id);
  hooks_.status_changed();
}

// Whether the computer has anything to be listened to for: a URI subscribed, or the list
// changes it offers.
bool Session::wants_listen() const {
  return !listened_uris_.empty() ||
         (offers_ & (ipc::offer::kToolsListChanged | ipc::offer::kPromptsListChanged));
}

// The listen of a computer that has just become ready, for the list changes it offers;
// nobody waits for its acknowledgement.
void Session::listen_from_the_start() {
  if (!(offers_ & ipc::offer::kStatelessOnly) || !wants_listen()) return;
  send_listen(pending_.reserve_id());
}

// Listen `id` for everything the computer is followed for now; it becomes the newest.
void Session::send_listen(std::uint64_t id) {
  newest_listen_ = id;
  json notifications = json::object();
  if (offers_ & ipc::offer::kToolsListChanged) notifications["toolsListChanged"] = true;
  if (offers_ & ipc::offer::kPromptsListChanged) notifications["promptsListChanged"] = true;
  if (!listened_uris_.empty()) notifications["resourceSubscriptions"] = listened_uris_;
  std::string listen_params = json{{"notifications", std::move(notifications)}}.dump();
  require_stateless_meta(listen_params, log_level_, /*askable=*/false, /*tasks=*/false);
  enqueue(R"({"id":)" + std::to_string(id) +
              R"(,"jsonrpc":"2.0","method":"subscriptions/listen","params":)" + listen_params + "}",
          /*droppable=*/false);
}

// The computer follows the URIs of listen `id`: the change that sent it is answered, and
// when it is the newest, it takes over from the one before.
void Session::on_listen_acknowledged(std::uint64_t id) {
  if (auto call = pending_.take(id)) {
    pending_.hold_until_delivered(call->call_id, call->caller);
    reply_written(call->call_id, jsonrpc::result_response(nullptr, json::object()));
    hooks_.status_changed();
  }
  if (id != newest_listen_) return end_listen(id);  // a later change, or none wanted now
  if (active_listen_ != id) end_listen(std::exchange(active_listen_, id));
}

// A message that names one of the worker's listens: an update or a list change passes
// on (without that name) when it comes from the acknowledged listen; true when the
// message was a listen's and is dealt with.
bool Session::take_listen_message(const std::string& method, json& message) {
  const std::uint64_t id = listen_named(message);
  if (id == 0) return false;
  if (method == "notifications/subscriptions/acknowledged") {
    on_listen_acknowledged(id);
    return true;
  }
  if (id != active_listen_) return true;  // one the worker is leaving, or never had
  forget_listen(message);
  return false;
}

void Session::end_listen(std::uint64_t id) {
  if (id == 0) return;
  const json notification{{"jsonrpc", "2.0"},
                          {"method", "notifications/cancelled"},
                          {"params", {{"requestId", id}, {"reason", "subscriptions changed"}}}};
  enqueue(notification.dump(), /*droppable=*/false);
}

}  // namespace sb::worker
