#include "supervisor/mcp/exchange.hpp"

#include "supervisor/workers/registry.hpp"

namespace sb::supervisor {

using json = nlohmann::json;

Underway Exchange::finish(const json& reply, std::string_view local_step) const {
  const auto result = reply.is_object() ? reply.find("result") : reply.end();
  const bool tool_error = result != reply.end() && result->is_object() &&
                          result->contains("isError") && result->at("isError") == true;
  request.done(ReplyText{.body = dump(reply),
                         .error_code = error_code_of(reply),
                         .tool_error = tool_error,
                         .local_step = local_step});
  return {};
}

Underway Exchange::swallow() const {
  request.done(std::nullopt);
  return {};
}

CallOwner Exchange::owner() const {
  return CallOwner{context().computer, context().caller, context().mcp_session};
}

const json* Exchange::params() const {
  if (!message.is_object()) return nullptr;
  const auto found = message.find("params");
  return found != message.end() && found->is_object() ? &*found : nullptr;
}

const json* Exchange::meta_member(std::string_view name) const {
  const json* found_params = params();
  if (!found_params) return nullptr;
  const auto meta = found_params->find("_meta");
  if (meta == found_params->end() || !meta->is_object()) return nullptr;
  const auto found = meta->find(name);
  return found == meta->end() ? nullptr : &*found;
}

bool Exchange::stateless() const {
  return context().era == Era::kStateless;
}

std::string Exchange::params_text() const {
  if (!message.is_object()) return "{}";
  const auto found = message.find("params");
  return found == message.end() ? "{}" : dump(*found);
}

const std::string* Exchange::params_string(std::string_view name) const {
  const json* found_params = params();
  if (!found_params) return nullptr;
  const auto found = found_params->find(name);
  return found != found_params->end() && found->is_string() ? &found->get_ref<const std::string&>()
                                                            : nullptr;
}

bool Exchange::computer_speaks_only_stateless() const {
  const auto view = services().workers.view(context().computer);
  return view && view->ready && (view->status.offers & ipc::offer::kStatelessOnly) != 0;
}

bool Exchange::offered(std::uint32_t offer_bit) const {
  const auto view = services().workers.view(context().computer);
  return !view || !view->ready || (view->status.offers & offer_bit) != 0;
}

std::optional<std::int64_t> error_code_of(const json& reply) {
  const auto error = reply.is_object() ? reply.find("error") : reply.end();
  if (error == reply.end() || !error->is_object()) return std::nullopt;
  const auto code = error->find("code");
  if (code == error->end() || !code->is_number_integer()) return std::nullopt;
  return code->get<std::int64_t>();
}

std::string dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

// Appended rather than `"`" + std::string(name) + "`"`, which g++ 12 at -O3 flags with a
// false -Wrestrict.
std::string backticked(std::string_view name) {
  std::string quoted;
  quoted.reserve(name.size() + 2);
  quoted += '`';
  quoted += name;
  quoted += '`';
  return quoted;
}

}  // namespace sb::supervisor
