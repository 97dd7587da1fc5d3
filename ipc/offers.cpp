#include "ipc/offers.hpp"

namespace sb::ipc::offer {

std::uint32_t of_capabilities(const nlohmann::json& capabilities) {
  if (!capabilities.is_object()) return 0;
  std::uint32_t bits = 0;
  if (capabilities.contains("logging")) bits |= kLogging;
  if (capabilities.contains("prompts")) bits |= kPrompts;
  if (capabilities.contains("completions")) bits |= kCompletions;
  const auto extensions = capabilities.find("extensions");
  if (extensions != capabilities.end() && extensions->is_object() &&
      extensions->contains("io.modelcontextprotocol/tasks"))
    bits |= kTasksExtension;
  const auto resources = capabilities.find("resources");
  if (resources == capabilities.end()) return bits;
  bits |= kResources;
  const auto subscribe = resources->is_object() ? resources->find("subscribe") : resources->end();
  if (subscribe != resources->end() && *subscribe == true) bits |= kResourceSubscribe;
  return bits;
}

}  // namespace sb::ipc::offer
