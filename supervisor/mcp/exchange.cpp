#include "supervisor/mcp/exchange.hpp"

namespace sb::supervisor {

using json = nlohmann::json;

Abandon Exchange::finish(const json& reply) const {
  request.done(ReplyText{.body = dump(reply)});
  return {};
}

Abandon Exchange::swallow() const {
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

std::string Exchange::params_text() const {
  if (!message.is_object()) return "{}";
  const auto found = message.find("params");
  return found == message.end() ? "{}" : dump(*found);
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
