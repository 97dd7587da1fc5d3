#include "worker/stateless_revision.hpp"

#include <algorithm>
#include <optional>

#include "shared/jsonrpc.hpp"

namespace sb::worker {
namespace {

using json = nlohmann::json;

bool lists_stateless_revision(const json& versions) {
  return versions.is_array() &&
         std::any_of(versions.begin(), versions.end(),
                     [](const json& version) { return version == jsonrpc::kStatelessRevision; });
}

json client_info() {
  return {{"name", jsonrpc::kProductName}, {"version", SWITCHBOARD_VERSION}};
}

json stateless_meta() {
  return {{"io.modelcontextprotocol/clientCapabilities", json::object()},
          {"io.modelcontextprotocol/clientInfo", client_info()},
          {"io.modelcontextprotocol/protocolVersion", jsonrpc::kStatelessRevision}};
}

}  // namespace

bool refused_for_stateless_revision(const json& reply) {
  const auto error = reply.find("error");
  if (error == reply.end() || !error->is_object()) return false;
  const auto code = error->find("code");
  if (code == error->end() || *code != jsonrpc::kUnsupportedRevision) return false;
  const auto data = error->find("data");
  if (data == error->end() || !data->is_object()) return false;
  const auto supported = data->find("supported");
  return supported != data->end() && lists_stateless_revision(*supported);
}

json discover_params() {
  return {{"_meta", stateless_meta()}};
}

std::optional<std::string> discovered_server(const json& result) {
  if (!result.is_object()) return std::nullopt;
  const auto versions = result.find("supportedVersions");
  if (versions == result.end() || !lists_stateless_revision(*versions)) return std::nullopt;
  // The revision puts it in the result's `_meta`; an earlier draft beside it.
  const auto meta = result.find("_meta");
  if (meta != result.end() && meta->is_object()) {
    const auto info = meta->find("io.modelcontextprotocol/serverInfo");
    if (info != meta->end() && info->is_object()) return info->dump();
  }
  const auto info = result.find("serverInfo");
  if (info != result.end() && info->is_object()) return info->dump();
  return "null";
}

bool require_stateless_meta(std::string& params_json, std::string_view log_level, bool askable,
                            bool tasks) {
  json params = json::parse(params_json, nullptr, /*allow_exceptions=*/false);
  if (!params.is_object()) return false;
  json& meta = params["_meta"];
  if (!meta.is_object()) meta = json::object();
  const bool declared_here = !meta.contains("io.modelcontextprotocol/clientCapabilities");
  if (declared_here) {
    json capabilities = askable ? json{{"elicitation", json::object()},
                                       {"roots", json::object()},
                                       {"sampling", json::object()}}
                                : json::object();
    if (tasks)
      capabilities["extensions"] = {{std::string(jsonrpc::kTasksExtension), json::object()}};
    meta["io.modelcontextprotocol/clientCapabilities"] = std::move(capabilities);
  }
  // The handshake era asks for a task in the call's params; 2026-07-28 by the declaration.
  if (tasks) params.erase("task");
  if (!meta.contains("io.modelcontextprotocol/clientInfo"))
    meta["io.modelcontextprotocol/clientInfo"] = client_info();
  meta["io.modelcontextprotocol/protocolVersion"] = jsonrpc::kStatelessRevision;
  if (!log_level.empty() && !meta.contains("io.modelcontextprotocol/logLevel"))
    meta["io.modelcontextprotocol/logLevel"] = log_level;
  params_json = params.dump(-1, ' ', false, json::error_handler_t::replace);
  return declared_here && askable;
}

bool names_stateless_revision(std::string_view params_json) {
  if (params_json.find(jsonrpc::kStatelessRevision) == std::string_view::npos) return false;
  const json params = json::parse(params_json, nullptr, /*allow_exceptions=*/false);
  const json::json_pointer version("/_meta/io.modelcontextprotocol~1protocolVersion");
  return params.is_object() && params.contains(version) &&
         params.at(version) == jsonrpc::kStatelessRevision;
}

std::string log_level_of(std::string_view params_json) {
  const json params = json::parse(params_json, nullptr, /*allow_exceptions=*/false);
  const auto level = params.is_object() ? params.find("level") : params.end();
  if (level == params.end() || !level->is_string()) return {};
  const auto& name = level->get_ref<const std::string&>();
  return jsonrpc::log_severity(name) ? name : std::string();
}

std::string requested_log_level(std::string_view params_json) {
  if (params_json.find("io.modelcontextprotocol/logLevel") == std::string_view::npos) return {};
  const json params = json::parse(params_json, nullptr, /*allow_exceptions=*/false);
  const json::json_pointer level("/_meta/io.modelcontextprotocol~1logLevel");
  if (!params.is_object() || !params.contains(level) || !params.at(level).is_string()) return {};
  const auto& name = params.at(level).get_ref<const std::string&>();
  return jsonrpc::log_severity(name) ? name : std::string();
}

}  // namespace sb::worker
