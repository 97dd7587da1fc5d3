#include "supervisor/mcp/listing.hpp"

#include <utility>

#include "shared/jsonrpc.hpp"
#include "supervisor/mcp/forward.hpp"
#include "supervisor/mcp/reply_text.hpp"
#include "supervisor/mcp/result_shape.hpp"

namespace sb::supervisor {
namespace {

using json = nlohmann::json;

json empty_list_reply(const json& id, std::string_view member, Era era) {
  json result{{std::string(member), json::array()}};
  shape_list(result, true, era);
  return jsonrpc::result_response(id, std::move(result));
}

ReplyText narrowed(const json& id, Era era, const ListFilter& filter, CallResult result) {
  if (result.status == ipc::CallStatus::kNotAttached)
    return ReplyText{.body = dump(empty_list_reply(id, filter.member, era)), .not_attached = true};
  if (result.status != ipc::CallStatus::kReplied) return relayed(id, std::move(result));
  json reply = json::parse(result.reply_without_id, nullptr, false);
  if (reply.is_object() && reply.contains("error")) return relayed(id, std::move(result));
  const auto list = reply.is_object() ? reply.find("result") : reply.end();
  if (list == reply.end() || !list->is_object())
    return {.body = dump(empty_list_reply(id, filter.member, era))};
  const auto items = list->find(filter.member);
  if (items == list->end() || !items->is_array())
    return {.body = dump(empty_list_reply(id, filter.member, era))};
  if (filter.keep) {
    json kept = json::array();
    for (auto& item : *items) {
      if (filter.keep(item)) kept.push_back(std::move(item));
    }
    *items = std::move(kept);
  }
  shape_list(*list, static_cast<bool>(filter.keep), era);
  reply["id"] = id;
  return ReplyText{.body = dump(reply)};
}

}  // namespace

Underway relay_list(const Exchange& exchange, ListFilter filter) {
  CallRequest request =
      request_to_computer(exchange, filter.method, exchange.config().timeouts.control_secs);
  return forward(exchange, std::move(request),
                 [id = exchange.id, era = exchange.context().era, filter = std::move(filter)](
                     CallResult result) { return narrowed(id, era, filter, std::move(result)); });
}

Underway empty_list(const Exchange& exchange, std::string_view member) {
  return exchange.finish(empty_list_reply(exchange.id, member, exchange.context().era));
}

}  // namespace sb::supervisor
