// What the switchboard learns of each computer's tools from the tools/list answers it
// relays, for what no single request shows:
// - which arguments a caller of 2026-07-28 repeats in Mcp-Param-<Name> headers
//   (docs/protocol.md, "Revisions", SEP-2243): the tool schemas mark them with
//   `x-mcp-header`, and headers never cross the WebSocket, so the switchboard checks them;
// - which tools of a handshake-era computer run as tasks (`execution.taskSupport`
//   "optional" or "required"), so that a 2026-07-28 caller's call that declares the tasks
//   extension asks for a task where the tool has one (docs/protocol.md, "Tasks across
//   eras").
// A computer's entries are replaced by each list that names the tool again; what no list
// has shown is neither checked nor asked for.
#pragma once

#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace sb::supervisor {

struct ParamHeader {
  std::string argument;  // the property of the tool's inputSchema
  std::string header;    // <Name> of Mcp-Param-<Name>, as the schema spells it
};

class ToolBook {
 public:
  // Bounds what one computer's lists can make the book hold.
  static constexpr std::size_t kMaxTools = 4096;
  static constexpr std::size_t kMaxHeadersPerTool = 64;

  // A computer's tools/list result's `tools`, as the computer answered it.
  void learn(const std::string& computer, const nlohmann::json& tools);
  // The headers a call of `tool` on `computer` must carry; null when none are known.
  const std::vector<ParamHeader>* param_headers(std::string_view computer,
                                                std::string_view tool) const;
  // Whether the computer's list said `tool` may run as a 2025-11-25 task.
  bool runs_as_task(std::string_view computer, std::string_view tool) const;

 private:
  struct Facts {
    std::vector<ParamHeader> headers;
    bool task = false;
  };
  using Tools = std::map<std::string, Facts, std::less<>>;
  const Facts* facts(std::string_view computer, std::string_view tool) const;

  std::map<std::string, Tools, std::less<>> computers_;
};

}  // namespace sb::supervisor
