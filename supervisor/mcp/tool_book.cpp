#include "supervisor/mcp/tool_book.hpp"

#include <algorithm>

namespace sb::supervisor {
namespace {

using json = nlohmann::json;

// A header name's characters (RFC 9110 token), so that a schema cannot name a header no
// caller could send.
bool header_name(std::string_view name) {
  constexpr std::string_view kPunctuation = "!#$%&'*+-.^_`|~";
  return !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [&](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           kPunctuation.find(c) != std::string_view::npos;
  });
}

std::vector<ParamHeader> headers_of(const json& tool) {
  std::vector<ParamHeader> headers;
  const auto schema = tool.find("inputSchema");
  if (schema == tool.end() || !schema->is_object()) return headers;
  const auto properties = schema->find("properties");
  if (properties == schema->end() || !properties->is_object()) return headers;
  for (const auto& [argument, property] : properties->items()) {
    if (headers.size() == ToolBook::kMaxHeadersPerTool) break;
    const auto header = property.is_object() ? property.find("x-mcp-header") : property.end();
    if (header == property.end() || !header->is_string()) continue;
    const auto& name = header->get_ref<const std::string&>();
    if (header_name(name)) headers.push_back(ParamHeader{argument, name});
  }
  return headers;
}

bool may_run_as_task(const json& tool) {
  const auto execution = tool.find("execution");
  if (execution == tool.end() || !execution->is_object()) return false;
  const auto support = execution->find("taskSupport");
  return support != execution->end() && (*support == "optional" || *support == "required");
}

}  // namespace

void ToolBook::learn(const std::string& computer, const json& tools) {
  if (!tools.is_array()) return;
  for (const auto& tool : tools) {
    const auto name = tool.is_object() ? tool.find("name") : tool.end();
    if (!tool.is_object() || name == tool.end() || !name->is_string()) continue;
    Facts learnt{.headers = headers_of(tool), .task = may_run_as_task(tool)};
    auto& known = computers_[computer];
    const auto& tool_name = name->get_ref<const std::string&>();
    if (learnt.headers.empty() && !learnt.task) {
      known.erase(tool_name);
    } else if (known.contains(tool_name) || known.size() < kMaxTools) {
      known[tool_name] = std::move(learnt);
    }
  }
}

const ToolBook::Facts* ToolBook::facts(std::string_view computer, std::string_view tool) const {
  const auto tools = computers_.find(computer);
  if (tools == computers_.end()) return nullptr;
  const auto found = tools->second.find(tool);
  return found == tools->second.end() ? nullptr : &found->second;
}

const std::vector<ParamHeader>* ToolBook::param_headers(std::string_view computer,
                                                        std::string_view tool) const {
  const Facts* known = facts(computer, tool);
  return known && !known->headers.empty() ? &known->headers : nullptr;
}

bool ToolBook::runs_as_task(std::string_view computer, std::string_view tool) const {
  const Facts* known = facts(computer, tool);
  return known && known->task;
}

}  // namespace sb::supervisor
