// Fuzz target: the worker's one-pass reader of a computer's message (worker/reply_scan.hpp).
//
// Input: the text of one WebSocket message, as the computer sent it.
//
// Besides memory safety, the scanner is held to what it promises, with nlohmann::json (which
// read these messages before it, and still reads requests and the supervisor's side) as the
// reference: it accepts exactly the JSON objects nlohmann accepts, save the two refusals it
// documents (two "id" members, nesting past the limit); what it picks out agrees with the
// parsed tree; and the reply body it builds is that object without its "id".
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.hpp"
#include "shared/jsonrpc.hpp"
#include "tests/support/json_reference.hpp"
#include "worker/reply_scan.hpp"

namespace {

using json = nlohmann::json;
using sb::worker::ScannedMessage;

// A second, much lower limit than the session's makes the nesting refusal reachable by short
// inputs, and must never change what is accepted below it.
constexpr int kLowNesting = 3;

// nlohmann's view of the text: the parsed value (discarded when invalid) and how many "id"
// keys the top-level object has, which its tree cannot show (a later duplicate replaces).
struct Reference {
  json value;
  int top_level_ids = 0;
};

Reference parse_reference(std::string_view text) {
  Reference reference;
  reference.value = json::parse(
      text,
      [&](int depth, json::parse_event_t event, json& parsed) {
        if (event == json::parse_event_t::key && depth == 1 && parsed == "id")
          ++reference.top_level_ids;
        return true;
      },
      /*allow_exceptions=*/false);
  return reference;
}

bool same_scan(const ScannedMessage& a, const ScannedMessage& b) {
  return a.is_response == b.is_response && a.has_id == b.has_id && a.id == b.id &&
         a.object.begin == b.object.begin && a.object.end == b.object.end &&
         a.id_cut.begin == b.id_cut.begin && a.id_cut.end == b.id_cut.end && a.kind == b.kind &&
         a.error_code == b.error_code;
}

void check_accepted(std::string_view text, const ScannedMessage& scanned,
                    const Reference& reference) {
  // The spans lie inside the text and the object is one.
  FUZZ_CHECK(scanned.object.begin < scanned.object.end && scanned.object.end <= text.size());
  FUZZ_CHECK(text[scanned.object.begin] == '{' && text[scanned.object.end - 1] == '}');
  if (scanned.has_id) {
    FUZZ_CHECK(scanned.object.begin < scanned.id_cut.begin);
    FUZZ_CHECK(scanned.id_cut.begin < scanned.id_cut.end);
    FUZZ_CHECK(scanned.id_cut.end < scanned.object.end);
  }

  // nlohmann reads the same object.
  FUZZ_CHECK(reference.value.is_object());
  const json& object = reference.value;
  FUZZ_CHECK(scanned.has_id == object.contains("id"));
  FUZZ_CHECK(reference.top_level_ids == (scanned.has_id ? 1 : 0));
  if (scanned.has_id) {
    // An id is picked out when it is a non-negative integer that fits, as nlohmann reads it.
    const json& id = object.at("id");
    FUZZ_CHECK(scanned.id.has_value() == id.is_number_unsigned());
    if (scanned.id) FUZZ_CHECK(*scanned.id == id.get<std::uint64_t>());
  }
  const bool has_result = object.contains("result");
  const bool has_error = object.contains("error");
  FUZZ_CHECK(scanned.is_response == (has_result || has_error));
  if (has_error) {
    FUZZ_CHECK(scanned.kind == sb::ipc::ReplyKind::kRpcError);
    const json& error = object.at("error");
    std::optional<std::int64_t> code;
    if (error.is_object() && error.contains("code")) {
      const json& value = error.at("code");
      if (value.is_number_integer() &&
          !(value.is_number_unsigned() &&
            value.get<std::uint64_t>() >
                static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))) {
        code = value.get<std::int64_t>();
      }
    }
    FUZZ_CHECK(scanned.error_code == code);
  } else {
    FUZZ_CHECK(!scanned.error_code);
    const json& result = has_result ? object.at("result") : json();
    const bool flagged = result.is_object() && result.contains("isError") &&
                         result.at("isError").is_boolean() && result.at("isError").get<bool>();
    FUZZ_CHECK((scanned.kind == sb::ipc::ReplyKind::kToolError) == flagged);
  }

  // The reply body: the object without "id", still valid, nothing else changed.
  const std::string body = sb::worker::without_id(text, scanned);
  const std::size_t cut = scanned.has_id ? scanned.id_cut.end - scanned.id_cut.begin : 0;
  FUZZ_CHECK(body.size() == scanned.object.end - scanned.object.begin - cut);
  json expected = object;
  expected.erase("id");
  const json reread = json::parse(body, nullptr, /*allow_exceptions=*/false);
  FUZZ_CHECK(reread == expected);
  const auto rescanned = sb::worker::scan_message(body, sb::jsonrpc::kMaxNesting);
  FUZZ_CHECK(rescanned && !rescanned->has_id);
  FUZZ_CHECK(rescanned->is_response == scanned.is_response && rescanned->kind == scanned.kind &&
             rescanned->error_code == scanned.error_code);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto scanned = sb::worker::scan_message(text, sb::jsonrpc::kMaxNesting);
  const auto shallow = sb::worker::scan_message(text, kLowNesting);
  FUZZ_CHECK(!shallow || (scanned && same_scan(*shallow, *scanned)));

  // No JSON text holds a raw NUL byte, and nlohmann's lexer takes one for the end of input
  // (it accepts "{}\0garbage"), so it is no reference for such text.
  if (text.find('\0') != std::string_view::npos) {
    FUZZ_CHECK(!scanned);
    return 0;
  }
  const Reference reference = parse_reference(text);
  if (scanned) {
    check_accepted(text, *scanned, reference);
  } else if (reference.value.is_object() && reference.top_level_ids <= 1) {
    // What nlohmann accepts, the scanner refuses only past its nesting limit.
    FUZZ_CHECK(sbtest::nesting_depth(reference.value) > sb::jsonrpc::kMaxNesting);
  }
  if (shallow) FUZZ_CHECK(sbtest::nesting_depth(reference.value) <= kLowNesting);
  return 0;
}
