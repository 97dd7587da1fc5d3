// Which tool arguments a caller of 2026-07-28 repeats in Mcp-Param-<Name> headers
// (docs/protocol.md, "Revisions", SEP-2243): each computer's tool schemas mark them with
// `x-mcp-header`, and headers never cross the WebSocket, so the switchboard learns them
// from every tools/list its computers answer and checks the headers itself. A computer's
// entries are replaced by each list that names the tool again; what no list has shown is
// not checked.
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

class ParamHeaderBook {
 public:
  // Bounds what one computer's lists can make the book hold.
  static constexpr std::size_t kMaxTools = 4096;
  static constexpr std::size_t kMaxHeadersPerTool = 64;

  // A computer's tools/list result's `tools`, as the computer answered it.
  void learn(const std::string& computer, const nlohmann::json& tools);
  // The headers a call of `tool` on `computer` must carry; null when none are known.
  const std::vector<ParamHeader>* of(std::string_view computer, std::string_view tool) const;

 private:
  using Tools = std::map<std::string, std::vector<ParamHeader>, std::less<>>;
  std::map<std::string, Tools, std::less<>> computers_;
};

}  // namespace sb::supervisor
