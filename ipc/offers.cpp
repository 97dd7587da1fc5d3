#include "ipc/offers.hpp"

namespace sb::ipc::offer {

namespace {

using json = nlohmann::json;

// Whether `capabilities[name]` is an object whose `flag` is true.
bool flag_set(const nlohmann::json& capabilities, const char* name, const char* flag) {
  const auto found = capabilities.find(name);
  if (found == capabilities.end() || !found->is_object()) return false;
  const auto value = found->find(flag);
  return value != found->end() && *value == true;
}

}  // namespace

std::uint32_t of_capabilities(const nlohmann::json& capabilities) {
  if (!capabilities.is_object()) return 0;
  std::uint32_t bits = 0;
  if (capabilities.contains("logging")) bits |= kLogging;
  if (capabilities.contains("prompts")) bits |= kPrompts;
  if (flag_set(capabilities, "tools", "listChanged")) bits |= kToolsListChanged;
  if (flag_set(capabilities, "prompts", "listChanged")) bits |= kPromptsListChanged;
  if (capabilities.contains("completions")) bits |= kCompletions;
  const auto extensions = capabilities.find("extensions");
  if (extensions != capabilities.end() && extensions->is_object() &&
      extensions->contains("io.modelcontextprotocol/tasks"))
    bits |= kTasksExtension;
  if (const auto tasks = capabilities.find("tasks");
      tasks != capabilities.end() && tasks->is_object()) {
    const json::json_pointer tool_call("/requests/tools/call");
    if (tasks->contains(tool_call) && tasks->at(tool_call).is_object()) bits |= kTasksToolCall;
    if (tasks->contains("list")) bits |= kTasksList;
    if (tasks->contains("cancel")) bits |= kTasksCancel;
  }
  const auto resources = capabilities.find("resources");
  if (resources == capabilities.end()) return bits;
  bits |= kResources;
  if (flag_set(capabilities, "resources", "subscribe")) bits |= kResourceSubscribe;
  return bits;
}

}  // namespace sb::ipc::offer
