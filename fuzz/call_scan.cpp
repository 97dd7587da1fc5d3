// Fuzz target: the supervisor's reading of a plain tools/call without a JSON tree
// (supervisor/mcp/call_scan.hpp).
//
// Input: a request body, as a caller sent it.
//
// The scanner decides which tool the policy judges and forwards the caller's own params,
// so it is held to nlohmann::json (which reads every other request) as the reference, both
// ways: what it takes, nlohmann reads as the same call (id, tool, params, arguments) with no
// member twice and no other member; and every such call nlohmann reads, it takes.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.hpp"
#include "shared/jsonrpc.hpp"
#include "supervisor/mcp/call_scan.hpp"
#include "tests/support/json_reference.hpp"

namespace {

using json = nlohmann::json;

bool only_members(const json& object, std::initializer_list<std::string_view> allowed) {
  for (const auto& [key, value] : object.items()) {
    bool known = false;
    for (const auto name : allowed) known |= key == name;
    if (!known) return false;
  }
  return true;
}

// The plain shape, as nlohmann reads it.
bool plain_call(const json& value) {
  if (!value.is_object() || !only_members(value, {"jsonrpc", "id", "method", "params"}))
    return false;
  if (!value.contains("id") || !value.contains("params") ||
      value.value("method", json()) != "tools/call")
    return false;
  const json& id = value.at("id");
  if (!id.is_string() && !id.is_number_integer()) return false;
  const json& params = value.at("params");
  if (!params.is_object() || !only_members(params, {"name", "arguments"})) return false;
  if (!params.contains("name") || !params.at("name").is_string()) return false;
  return !params.contains("arguments") || params.at("arguments").is_object();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto call = sb::supervisor::scan_tools_call(text, sb::jsonrpc::kMaxNesting);
  // No JSON text holds a raw NUL byte, and nlohmann's lexer takes one for the end of input,
  // so it is no reference for such text.
  if (text.find('\0') != std::string_view::npos) {
    FUZZ_CHECK(!call);
    return 0;
  }
  const json reference = json::parse(text, nullptr, /*allow_exceptions=*/false);
  const bool plain = !reference.is_discarded() && !sbtest::repeats_a_request_member(text) &&
                     sbtest::nesting_depth(reference) <= sb::jsonrpc::kMaxNesting &&
                     plain_call(reference);
  FUZZ_CHECK(call.has_value() == plain);
  if (!call) return 0;

  // The spans lie inside the text and read, on their own, as the tree's parts.
  const json& request = reference;
  const json& params = request.at("params");
  FUZZ_CHECK(call->params.data() >= text.data() &&
             call->params.data() + call->params.size() <= text.data() + text.size());
  FUZZ_CHECK(json::parse(call->id, nullptr, false) == request.at("id"));
  FUZZ_CHECK(json::parse(call->params, nullptr, false) == params);
  FUZZ_CHECK(params.at("name") == call->tool);
  FUZZ_CHECK(call->arguments.has_value() == params.contains("arguments"));
  if (call->arguments)
    FUZZ_CHECK(json::parse(*call->arguments, nullptr, false) == params.at("arguments"));
  return 0;
}
