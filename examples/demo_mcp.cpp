#include "examples/demo_mcp.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <exception>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

namespace demo {
namespace {

// Thrown for arguments of the wrong shape; becomes JSON-RPC -32602.
struct InvalidParams : std::runtime_error {
  using std::runtime_error::runtime_error;
};

json rpc_result(const json& id, json result) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

json tool_result(const std::string& text, std::optional<json> structured = std::nullopt) {
  json result = {{"content", json::array({{{"type", "text"}, {"text", text}}})},
                 {"isError", false}};
  if (structured) result["structuredContent"] = std::move(*structured);
  return result;
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

// PRETTY_NAME from /etc/os-release with its quotes stripped, else "<sysname> <release>".
std::string os_name() {
  std::ifstream os_release("/etc/os-release");
  for (std::string line; std::getline(os_release, line);) {
    constexpr std::string_view kKey = "PRETTY_NAME=";
    if (!line.starts_with(kKey)) continue;
    std::string value = line.substr(kKey.size());
    const bool quoted = value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
                        value.back() == value.front();
    if (quoted) value = value.substr(1, value.size() - 2);
    if (!value.empty()) return value;
  }
  utsname system{};
  if (uname(&system) == 0) return std::string(system.sysname) + " " + system.release;
  return "Linux";
}

json sys_info_tool(const json& /*arguments: none*/) {
  const std::string host = host_name();
  const std::string os = os_name();
  // This shape is what OpenAB Connect reads. No screen here, so no permissions and no
  // displays: Connect then shows no screen.
  json structured = {
      {"host", host},
      {"os", os},
      {"agent",
       {{"name", std::string(kProgram)},
        {"version", std::string(kVersion)},
        {"platform", "linux"}}},
      {"permissions", {{"screen_recording", false}, {"accessibility", false}}},
      {"displays", json::array()},
  };
  return tool_result(host + " · " + os + " · 0 display(s)", std::move(structured));
}

json echo_tool(const json& arguments) {
  const auto text = arguments.find("text");
  if (text == arguments.end() || !text->is_string())
    throw InvalidParams("`text` is required and must be a string");
  return tool_result(text->get<std::string>());
}

json clock_tool(const json& /*arguments: none*/) {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return tool_result(text, json{{"utc", text}});
}

struct Tool {
  std::string name;
  std::string description;
  json input_schema;
  json (*run)(const json& arguments);
};

const std::vector<Tool>& tools() {
  static const std::vector<Tool> all = {
      {"sys_info",
       "Host name, operating system and agent of this computer (it has no display).",
       {{"type", "object"}, {"properties", json::object()}},
       sys_info_tool},
      {"echo",
       "Returns `text` unchanged.",
       {{"type", "object"},
        {"properties", {{"text", {{"type", "string"}, {"description", "Text to return"}}}}},
        {"required", json::array({"text"})}},
       echo_tool},
      {"clock",
       "The current UTC time (RFC 3339).",
       {{"type", "object"}, {"properties", json::object()}},
       clock_tool},
  };
  return all;
}

json list_tools() {
  json listed = json::array();
  for (const Tool& tool : tools())
    listed.push_back({{"name", tool.name},
                      {"description", tool.description},
                      {"inputSchema", tool.input_schema}});
  return {{"tools", std::move(listed)}};
}

json call_tool(const json& id, const json& params) {
  if (!params.is_object()) throw InvalidParams("`params` must be an object");
  const auto name = params.find("name");
  if (name == params.end() || !name->is_string())
    throw InvalidParams("`name` is required and must be a string");
  const auto tool = std::find_if(tools().begin(), tools().end(),
                                 [&](const Tool& t) { return t.name == name->get<std::string>(); });
  if (tool == tools().end())
    return rpc_error(id, -32601, "unknown tool '" + name->get<std::string>() + "'");

  json arguments = json::object();  // absent or null: no arguments
  if (const auto given = params.find("arguments"); given != params.end() && !given->is_null()) {
    if (!given->is_object()) throw InvalidParams("`arguments` must be an object");
    arguments = *given;
  }
  try {
    return rpc_result(id, tool->run(arguments));
  } catch (const InvalidParams&) {
    throw;
  } catch (const std::exception& error) {
    // The caller is always answered, never left to time out.
    log_line("tool " + tool->name + " crashed: " + error.what());
    return rpc_error(id, -32603, "internal error in " + tool->name);
  }
}

}  // namespace

json rpc_error(const json& id, int code, const std::string& message) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}};
}

std::string tool_names() {
  std::string names;
  for (const Tool& tool : tools()) names += (names.empty() ? "" : ", ") + tool.name;
  return names;
}

bool is_request(const json& message) {
  if (!message.is_object()) return false;
  const auto method = message.find("method");
  const auto id = message.find("id");
  return method != message.end() && method->is_string() && id != message.end() && !id->is_null();
}

json reply_to(const json& request) {
  const json& id = request.at("id");  // echoed exactly as received
  const std::string method = request.at("method").get<std::string>();
  const json params = request.contains("params") ? request.at("params") : json::object();
  try {
    if (method == "initialize")
      // Always our own protocol version and identity, whatever the client offered.
      return rpc_result(
          id,
          {{"protocolVersion", std::string(kProtocolVersion)},
           {"capabilities", {{"tools", json::object()}}},
           {"serverInfo", {{"name", std::string(kProgram)}, {"version", std::string(kVersion)}}}});
    if (method == "ping") return rpc_result(id, json::object());
    if (method == "tools/list") return rpc_result(id, list_tools());
    if (method == "tools/call") return call_tool(id, params);
    return rpc_error(id, -32601, "method '" + method + "' not found");
  } catch (const InvalidParams& error) {
    return rpc_error(id, -32602, std::string("invalid params: ") + error.what());
  } catch (const std::exception& error) {
    log_line("request " + method + " failed: " + error.what());
    return rpc_error(id, -32603, "internal error");
  }
}

}  // namespace demo
