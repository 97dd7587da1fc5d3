// One request being answered, as each method's handler sees it (lifecycle.hpp, tools.hpp,
// tasks.hpp): the message, its id, the caller's policy, the services and the config, and
// the ways to answer. Shared by the files of northbound MCP; nothing else sees it.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "supervisor/mcp/call_book.hpp"
#include "supervisor/mcp/request.hpp"

namespace sb::supervisor {

struct Exchange {
  const nlohmann::json& message;  // null for a tools/call read by the scanner
  nlohmann::json id;              // the caller's, as it sent it
  const McpRequest& request;

  const CallerContext& context() const { return request.context; }
  const McpServices& services() const { return request.services; }
  const config::Config& config() const { return *request.config; }

  // Answers with `reply`, made here; nothing stays pending. `local_step` names what the
  // switchboard did to answer it, for the request's span (docs/observability.md).
  Underway finish(const nlohmann::json& reply, std::string_view local_step = {}) const;
  // Answers with nothing (HTTP 202): a notification or a response from the caller.
  Underway swallow() const;
  // Whose calls this caller may name: its computer, its name and its MCP session.
  CallOwner owner() const;
  // The message's params when they are an object; null otherwise.
  const nlohmann::json* params() const;
  // The params as JSON text, "{}" when there are none.
  std::string params_text() const;
  // A string member of the params, or null.
  const std::string* params_string(std::string_view name) const;
  // The member `name` of the params' _meta, or null.
  const nlohmann::json* meta_member(std::string_view name) const;
  // A 2026-07-28 request: its caller speaks the stateless era (docs/protocol.md, "Eras").
  bool stateless() const;
  // Whether the computer, attached and ready, speaks only 2026-07-28 (ipc::offer::).
  bool computer_speaks_only_stateless() const;
  // Whether the computer offers what `offer_bit` (ipc::offer::) names, as far as is known:
  // a computer not attached or not ready yet is not held against it.
  bool offered(std::uint32_t offer_bit) const;
};

// The code of a JSON-RPC error reply; none for anything else.
std::optional<std::int64_t> error_code_of(const nlohmann::json& reply);

// JSON text as the switchboard writes it: invalid UTF-8 replaced rather than thrown on.
std::string dump(const nlohmann::json& value);

// `name` in backticks, for messages.
std::string backticked(std::string_view name);

}  // namespace sb::supervisor
