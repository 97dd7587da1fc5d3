#include "ipc/messages.hpp"

#include <algorithm>
#include <array>
#include <utility>

#include "ipc/meta_codec.hpp"

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

std::string encode_call_meta(const CallMeta& meta) {
  return MetaWriter()
      .text(meta.caller)
      .number(static_cast<std::uint64_t>(std::max(meta.caller_cap, 0)))
      .number(duration_number(meta.timeout))
      .number(duration_number(meta.max_total))
      .text(meta.method)
      .byte(meta.stream ? 1 : 0)
      .take();
}

std::optional<CallMeta> decode_call_meta(std::string_view meta) {
  MetaReader in(meta);
  const std::string_view caller = in.text();
  const auto caller_cap = int_count(in.number());
  const auto timeout = duration(in.number());
  const auto max_total = duration(in.number());
  const std::string_view method = in.text();
  const auto stream = flag(in.byte());
  if (!in.complete() || !caller_cap || !timeout || !max_total || !stream) return std::nullopt;
  return CallMeta{std::string(caller), *caller_cap,         *timeout,
                  *max_total,          std::string(method), *stream};
}

// status, kind, whether an error code follows its place; the reply's size; the code or 0;
// the three times.
std::string encode_outcome(const CallOutcome& outcome) {
  return MetaWriter()
      .byte(static_cast<std::uint8_t>(outcome.status))
      .byte(static_cast<std::uint8_t>(outcome.kind))
      .byte(outcome.error_code ? 1 : 0)
      .number(outcome.response_bytes)
      .number(static_cast<std::uint64_t>(outcome.error_code.value_or(0)))
      .number(outcome.sent_unix_nanos)
      .number(outcome.first_byte_unix_nanos)
      .number(outcome.replied_unix_nanos)
      .take();
}

std::optional<CallOutcome> decode_outcome(std::string_view meta) {
  MetaReader in(meta);
  const auto status = enum_in_range(in.byte(), CallStatus::kDisconnected);
  const auto kind = enum_in_range(in.byte(), ReplyKind::kToolError);
  const auto has_code = flag(in.byte());
  const std::uint64_t response_bytes = in.number();
  const auto code = static_cast<std::int64_t>(in.number());
  const std::uint64_t sent = in.number();
  const std::uint64_t first_byte = in.number();
  const std::uint64_t replied = in.number();
  if (!in.complete() || !status || !kind || !has_code || (!*has_code && code != 0))
    return std::nullopt;
  CallOutcome outcome{*status, response_bytes, *kind};
  if (*has_code) outcome.error_code = code;
  outcome.sent_unix_nanos = sent;
  outcome.first_byte_unix_nanos = first_byte;
  outcome.replied_unix_nanos = replied;
  return outcome;
}

std::string encode_message_meta(const MessageMeta& meta) {
  return MetaWriter().byte(static_cast<std::uint8_t>(meta.kind)).number(meta.key).take();
}

std::optional<MessageMeta> decode_message_meta(std::string_view meta) {
  MetaReader in(meta);
  const auto kind = enum_in_range(in.byte(), MessageKind::kNotification);
  const std::uint64_t key = in.number();
  if (!in.complete() || !kind) return std::nullopt;
  return MessageMeta{*kind, key};
}

}  // namespace sb::ipc
