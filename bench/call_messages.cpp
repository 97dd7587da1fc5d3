#include "bench/call_messages.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "bench/fake_computer.hpp"

namespace sbbench {
namespace {

using json = nlohmann::json;

// Appended rather than a `+` chain, which g++ 12 at -O3 flags with a false -Wrestrict.
std::string nonce_of(int caller, std::uint64_t id) {
  std::string nonce = "c";
  nonce += std::to_string(caller);
  nonce += '-';
  nonce += std::to_string(id);
  return nonce;
}

}  // namespace

std::string_view tool_of(const CallSpec& spec) {
  return spec.result_bytes ? "screenshot" : "echo";
}

std::string request_body(int caller, std::uint64_t id, const CallSpec& spec, bool stateless) {
  const std::string progress =
      spec.progress ? R"(,"progress":)" + std::to_string(spec.progress) : std::string();
  std::string meta;
  if (spec.progress || stateless) {
    meta = R"("_meta":{)";
    if (stateless) {
      meta += R"("io.modelcontextprotocol/clientCapabilities":{},)"
              R"("io.modelcontextprotocol/protocolVersion":"2026-07-28")";
    }
    if (spec.progress) {
      if (stateless) meta += ',';
      meta += R"("progressToken":"p)" + std::to_string(id) + '"';
    }
    meta += "},";
  }
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":"tools/call","params":{)" +
         meta + R"("name":")" + std::string(tool_of(spec)) + R"(","arguments":{"nonce":")" +
         nonce_of(caller, id) + R"(","bytes":)" + std::to_string(spec.result_bytes) + progress +
         "}}}";
}

std::string held_call_body(std::uint64_t id) {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
         R"(,"method":"tools/call","params":{"name":"echo","arguments":{"hold":true}}})";
}

std::string cancel_body(std::uint64_t id) {
  return R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":)" +
         std::to_string(id) + R"(,"reason":"bench"}})";
}

bool is_progress_of(std::string_view text, std::uint64_t id) {
  const json message = json::parse(text, nullptr, false);
  return message.is_object() && message.value("method", "") == "notifications/progress" &&
         message.contains("params") && message["params"].is_object() &&
         message["params"].value("progressToken", json()) == json("p" + std::to_string(id));
}

// The caller's work after a call: is this the answer to that request? A small reply is
// parsed whole; a large one is checked in place (id, image length, its first and last
// bytes) so that the check costs the same small amount on both paths.
std::optional<std::string> check_reply(std::string_view body, int caller, std::uint64_t id,
                                       const CallSpec& spec) {
  auto excerpt = [&] { return std::string(body.substr(0, 160)); };
  if (spec.result_bytes == 0) {
    const json reply = json::parse(body, nullptr, false);
    if (!reply.is_object()) return "not a JSON object: " + excerpt();
    if (reply.value("id", json()) != json(id)) return "wrong id: " + excerpt();
    const auto result = reply.find("result");
    if (result == reply.end() || !result->is_object()) return "no result: " + excerpt();
    if (result->value("isError", true)) return "isError: " + excerpt();
    const auto content = result->find("content");
    if (content == result->end() || !content->is_array() || content->empty() ||
        !(*content)[0].is_object() || (*content)[0].value("text", "") != nonce_of(caller, id)) {
      return "wrong content: " + excerpt();
    }
    return std::nullopt;
  }
  const std::string head = R"({"id":)" + std::to_string(id) + ",";
  if (!body.starts_with(head)) return "wrong id: " + excerpt();
  const auto marker = body.find(R"("data":")");
  if (marker == std::string_view::npos) return "no image data: " + excerpt();
  const std::size_t start = marker + 8;
  const std::size_t length = spec.result_bytes;
  if (body.size() <= start + length || body[start + length] != '"' ||
      body.find('"', start) != start + length) {
    return "image data of the wrong length: " + excerpt();
  }
  const auto expected = image_data(length);
  const std::size_t probe = std::min<std::size_t>(64, length);
  if (body.compare(start, probe, *expected, 0, probe) != 0 ||
      body.compare(start + length - probe, probe, *expected, length - probe, probe) != 0) {
    return "image data differs";
  }
  if (!body.ends_with("}")) return "truncated reply";
  return std::nullopt;
}

}  // namespace sbbench
