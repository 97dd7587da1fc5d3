// Fuzz target: the supervisor's reading of a plain tools/call without a JSON tree
// (supervisor/call_scan.hpp).
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
#include <vector>

#include "fuzz/fuzz_check.hpp"
#include "shared/jsonrpc.hpp"
#include "supervisor/call_scan.hpp"

namespace {

using json = nlohmann::json;

// nlohmann's view of the text, and whether the request or its params names a member twice
// (its tree keeps the last and cannot show it). Inside arguments a repeat is the computer's
// to read as it will: the switchboard reads nothing there, and forwards the caller's bytes.
struct Reference {
  json value;
  bool repeats_a_member = false;
};

Reference parse_reference(std::string_view text) {
  Reference reference;
  std::vector<std::string> request_keys;
  std::vector<std::string> params_keys;
  bool in_params = false;  // the current depth-2 keys are params'
  const auto repeat = [&](std::vector<std::string>& keys, const std::string& key) {
    for (const auto& seen : keys) reference.repeats_a_member |= seen == key;
    keys.push_back(key);
  };
  reference.value = json::parse(
      text,
      [&](int depth, json::parse_event_t event, json& parsed) {
        // A top-level member's object value starts at depth 1; its keys come at depth 2.
        if (event == json::parse_event_t::object_start && depth == 1)
          in_params = !request_keys.empty() && request_keys.back() == "params";
        if (event == json::parse_event_t::key && depth == 1)
          repeat(request_keys, parsed.get<std::string>());
        if (event == json::parse_event_t::key && depth == 2 && in_params)
          repeat(params_keys, parsed.get<std::string>());
        return true;
      },
      /*allow_exceptions=*/false);
  return reference;
}

int depth_of(const json& value) {
  if (!value.is_structured()) return 0;
  int deepest = 0;
  for (const auto& child : value) deepest = std::max(deepest, depth_of(child));
  return deepest + 1;
}

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
  const Reference reference = parse_reference(text);
  const bool plain = !reference.value.is_discarded() && !reference.repeats_a_member &&
                     depth_of(reference.value) <= sb::jsonrpc::kMaxNesting &&
                     plain_call(reference.value);
  FUZZ_CHECK(call.has_value() == plain);
  if (!call) return 0;

  // The spans lie inside the text and read, on their own, as the tree's parts.
  const json& request = reference.value;
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
