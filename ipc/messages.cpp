#include "ipc/messages.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <utility>

namespace sb::ipc {
namespace {

constexpr std::array<std::pair<CallStatus, std::string_view>, 5> kNames{{
    {CallStatus::kReplied, "replied"},
    {CallStatus::kNotAttached, "not_attached"},
    {CallStatus::kOverloaded, "overloaded"},
    {CallStatus::kTimeout, "timeout"},
    {CallStatus::kDisconnected, "disconnected"},
}};

}  // namespace

std::string_view to_string(CallStatus status) {
  for (const auto& [value, name] : kNames) {
    if (value == status) return name;
  }
  return "disconnected";
}

std::optional<CallStatus> call_status_from(std::string_view text) {
  for (const auto& [value, name] : kNames) {
    if (name == text) return value;
  }
  return std::nullopt;
}

std::string encode_outcome(const CallOutcome& outcome) {
  nlohmann::json meta{{"status", to_string(outcome.status)},
                      {"response_bytes", outcome.response_bytes},
                      {"kind", static_cast<int>(outcome.kind)}};
  if (outcome.error_code) meta["error_code"] = *outcome.error_code;
  return meta.dump();
}

namespace {

// A small enum's number, range-checked before it is narrowed: a worker's meta is checked,
// not trusted, and {"kind": 4294967297} must not read as 1.
template <typename Enum>
std::optional<Enum> enum_in_range(const nlohmann::json& value, Enum last) {
  if (value.is_number_unsigned()) {
    const auto number = value.get<std::uint64_t>();
    if (number > static_cast<std::uint64_t>(last)) return std::nullopt;
    return static_cast<Enum>(number);
  }
  if (!value.is_number_integer()) return std::nullopt;
  const auto number = value.get<std::int64_t>();
  if (number < 0 || number > static_cast<std::int64_t>(last)) return std::nullopt;
  return static_cast<Enum>(number);
}

// Whether every key of `object` is one of `allowed`: a meta is checked, not skimmed.
bool only_keys(const nlohmann::json& object, std::initializer_list<std::string_view> allowed) {
  for (const auto& [key, value] : object.items()) {
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) return false;
  }
  return true;
}

}  // namespace

std::optional<CallOutcome> decode_outcome(std::string_view meta) {
  const auto parsed = nlohmann::json::parse(meta, nullptr, false);
  if (!parsed.is_object() || !only_keys(parsed, {"status", "response_bytes", "kind", "error_code"}))
    return std::nullopt;
  const auto status = parsed.find("status");
  const auto bytes = parsed.find("response_bytes");
  if (status == parsed.end() || !status->is_string()) return std::nullopt;
  if (bytes == parsed.end() || !bytes->is_number_unsigned()) return std::nullopt;
  const auto value = call_status_from(status->get<std::string>());
  if (!value) return std::nullopt;
  CallOutcome outcome{*value, bytes->get<std::size_t>()};
  const auto kind = parsed.find("kind");
  if (kind != parsed.end()) {
    const auto known = enum_in_range(*kind, ReplyKind::kToolError);
    if (!known) return std::nullopt;
    outcome.kind = *known;
  }
  const auto code = parsed.find("error_code");
  if (code != parsed.end()) {
    // A JSON-RPC error code is a signed integer; one beyond int64 is no code at all.
    if (!code->is_number_integer()) return std::nullopt;
    if (code->is_number_unsigned() &&
        code->get<std::uint64_t>() >
            static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      return std::nullopt;
    outcome.error_code = code->get<std::int64_t>();
  }
  return outcome;
}

std::string encode_message_meta(const MessageMeta& meta) {
  return nlohmann::json{{"kind", static_cast<int>(meta.kind)}, {"key", meta.key}}.dump();
}

std::optional<MessageMeta> decode_message_meta(std::string_view meta) {
  const auto parsed = nlohmann::json::parse(meta, nullptr, false);
  if (!parsed.is_object() || !only_keys(parsed, {"kind", "key"})) return std::nullopt;
  const auto kind = parsed.find("kind");
  const auto key = parsed.find("key");
  if (kind == parsed.end() || key == parsed.end() || !key->is_number_unsigned())
    return std::nullopt;
  const auto known = enum_in_range(*kind, MessageKind::kNotification);
  if (!known) return std::nullopt;
  return MessageMeta{*known, key->get<std::uint64_t>()};
}

}  // namespace sb::ipc
