#include "supervisor/mcp/lifecycle.hpp"

#include <algorithm>
#include <array>

#include "ipc/offers.hpp"
#include "shared/jsonrpc.hpp"
#include "supervisor/workers/registry.hpp"

namespace sb::supervisor {
namespace {

using json = nlohmann::json;

// Oldest first. The last is stateless: no initialize, so it is never negotiated, but its
// callers are served (docs/protocol.md, "Revisions").
constexpr std::array<std::string_view, 5> kProtocolVersions{
    "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"};
constexpr std::string_view kNewestVersion = "2025-11-25";

// The revision initialize answers with: the caller's, when the switchboard speaks it.
std::string negotiated_version(const json* params) {
  if (!params) return std::string(kNewestVersion);
  const auto asked = params->find("protocolVersion");
  if (asked != params->end() && asked->is_string() && *asked != kStatelessRevision &&
      supported_protocol_version(asked->get_ref<const std::string&>())) {
    return asked->get<std::string>();
  }
  return std::string(kNewestVersion);
}

// Logging, resource subscriptions and list changes are offered only when the computer
// offers them and is ready now (docs/protocol.md, "Subscriptions"). Resources, prompts and
// completions are offered to a caller granted any, whether or not its computer is attached
// now: what it sees of them then is empty.
enum class Revision { kStateful, kStateless };

// Tasks in the caller's era, from the computer's in either (docs/protocol.md, "Tasks across
// eras"): the 2025-11-25 `tasks` capability, or the 2026-07-28 tasks extension's entry;
// null when the computer has no tasks a caller of that era can reach. A 2026-only computer
// has no tasks/list.
template <typename Offered>
json task_capabilities(const Offered& offered, Revision revision) {
  const bool handshake_tasks =
      offered(ipc::offer::kTasksToolCall) && !offered(ipc::offer::kStatelessOnly);
  const bool extension = offered(ipc::offer::kTasksExtension);
  if (revision == Revision::kStateless)
    return handshake_tasks || extension ? json::object() : json();
  if (handshake_tasks) {
    json tasks{{"requests", {{"tools", {{"call", json::object()}}}}}};
    if (offered(ipc::offer::kTasksList)) tasks["list"] = json::object();
    if (offered(ipc::offer::kTasksCancel)) tasks["cancel"] = json::object();
    return tasks;
  }
  if (extension && offered(ipc::offer::kStatelessOnly))
    return json{{"cancel", json::object()}, {"requests", {{"tools", {{"call", json::object()}}}}}};
  return json();
}

json capabilities(const std::optional<ComputerView>& view, const CallerContext& context,
                  Revision revision) {
  const auto offered = [&view](std::uint32_t bit) {
    return view && view->ready && (view->status.offers & bit) != 0;
  };
  json capabilities{{"tools", {{"listChanged", offered(ipc::offer::kToolsListChanged)}}}};
  if (offered(ipc::offer::kLogging)) capabilities["logging"] = json::object();
  if (context.resources.any()) {
    capabilities["resources"] = {{"listChanged", false},
                                 {"subscribe", offered(ipc::offer::kResourceSubscribe)}};
  }
  if (context.prompts.any())
    capabilities["prompts"] = {{"listChanged", offered(ipc::offer::kPromptsListChanged)}};
  if (context.resources.any() || context.prompts.any())
    capabilities["completions"] = json::object();
  if (const auto tasks = task_capabilities(offered, revision); !tasks.is_null()) {
    if (revision == Revision::kStateless)
      capabilities["extensions"] = {{"io.modelcontextprotocol/tasks", tasks}};
    else
      capabilities["tasks"] = tasks;
  }
  return capabilities;
}

json server_info() {
  return json{{"name", jsonrpc::kProductName}, {"version", SWITCHBOARD_VERSION}};
}

}  // namespace

Underway initialize(const Exchange& exchange) {
  const auto view = exchange.services().workers.view(exchange.context().computer);
  return exchange.finish(
      jsonrpc::result_response(
          exchange.id,
          json{{"capabilities", capabilities(view, exchange.context(), Revision::kStateful)},
               {"instructions", instructions(exchange.context().computer, view && view->ready)},
               {"protocolVersion", negotiated_version(exchange.params())},
               {"serverInfo", server_info()}}),
      "initialize");
}

// What a 2026-07-28 caller asks instead of initialize: the same facts, no session.
Underway discover(const Exchange& exchange) {
  const auto view = exchange.services().workers.view(exchange.context().computer);
  json versions = json::array();
  for (const auto version : kProtocolVersions) versions.push_back(version);
  return exchange.finish(
      jsonrpc::result_response(
          exchange.id,
          json{{"_meta", {{"io.modelcontextprotocol/serverInfo", server_info()}}},
               {"capabilities", capabilities(view, exchange.context(), Revision::kStateless)},
               {"instructions", instructions(exchange.context().computer, view && view->ready)},
               {"resultType", "complete"},
               // Also at the top level, where drafts of the revision put it.
               {"serverInfo", server_info()},
               {"supportedVersions", std::move(versions)},
               // What is offered follows the caller's grant and the computer's attachment.
               {"cacheScope", "private"},
               {"ttlMs", 0}}),
      "server/discover");
}

// A logging level is per socket: one caller may set it only when no other caller shares
// the computer. Either way the caller is told it took.
Underway set_log_level(const Exchange& exchange) {
  const config::Config& config = exchange.config();
  const config::Computer* computer = config.find_computer(exchange.context().computer);
  if (computer && computer->sole_caller) {
    CallRequest request{.caller = exchange.context().caller,
                        .caller_cap = exchange.context().caller_cap,
                        .timeout = std::chrono::seconds(config.timeouts.control_secs),
                        .method = "logging/setLevel",
                        .params_json = exchange.params_text()};
    exchange.services().workers.forward(exchange.context().computer, std::move(request),
                                        [](CallResult) {});
  }
  return exchange.finish(jsonrpc::result_response(exchange.id, json::object()));
}

std::string instructions(std::string_view computer, bool ready) {
  if (ready) {
    return "A remote computer is connected through OpenAB Switchboard as " + backticked(computer) +
           ". Its tools are in tools/list next to vm_status. Calls cross the network, so a latency "
           "of a "
           "second or more is normal. Never assume that a call which timed out did not run.";
  }
  return "The remote computer " + backticked(computer) +
         " is not connected to OpenAB Switchboard right now; only vm_status is available. Call it, "
         "or "
         "list tools again later.";
}

std::span<const std::string_view> supported_protocol_versions() {
  return kProtocolVersions;
}

bool supported_protocol_version(std::string_view version) {
  return std::find(kProtocolVersions.begin(), kProtocolVersions.end(), version) !=
         kProtocolVersions.end();
}

std::string supported_protocol_versions_text() {
  std::string text;
  for (const auto version : kProtocolVersions) {
    if (!text.empty()) text += ", ";
    text += version;
  }
  return text;
}

}  // namespace sb::supervisor
