#include "ipc/messages.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
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

class MetaWriter {
 public:
  MetaWriter& byte(std::uint8_t value) {
    out_.push_back(static_cast<char>(value));
    return *this;
  }
  MetaWriter& number(std::uint64_t value) {
    out_.append(reinterpret_cast<const char*>(&value), sizeof value);
    return *this;
  }
  MetaWriter& text(std::string_view value) {
    number(value.size());
    out_.append(value);
    return *this;
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

// Reads what MetaWriter wrote. A read past the end yields zero and marks the meta
// malformed, so a decoder reads every field and checks once, at the end.
class MetaReader {
 public:
  explicit MetaReader(std::string_view in) : in_(in) {}

  std::uint8_t byte() {
    if (in_.empty()) return fail<std::uint8_t>();
    const auto value = static_cast<std::uint8_t>(in_.front());
    in_.remove_prefix(1);
    return value;
  }
  std::uint64_t number() {
    std::uint64_t value;
    if (in_.size() < sizeof value) return fail<std::uint64_t>();
    std::memcpy(&value, in_.data(), sizeof value);
    in_.remove_prefix(sizeof value);
    return value;
  }
  std::string_view text() {
    const std::uint64_t size = number();
    if (size > in_.size()) return fail<std::string_view>();
    const std::string_view value = in_.substr(0, size);
    in_.remove_prefix(size);
    return value;
  }
  // Every field was there and nothing follows them.
  bool complete() const { return !failed_ && in_.empty(); }

 private:
  template <typename T>
  T fail() {
    failed_ = true;
    in_ = {};
    return T{};
  }

  std::string_view in_;
  bool failed_ = false;
};

// A small enum's number, in range before it is converted.
template <typename Enum>
std::optional<Enum> enum_in_range(std::uint8_t number, Enum last) {
  if (number > static_cast<std::uint8_t>(last)) return std::nullopt;
  return static_cast<Enum>(number);
}

std::optional<bool> flag(std::uint8_t number) {
  if (number > 1) return std::nullopt;
  return number == 1;
}

// Milliseconds that a std::chrono::milliseconds holds, counted from zero.
std::optional<std::chrono::milliseconds> duration(std::uint64_t number) {
  if (number > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
    return std::nullopt;
  return std::chrono::milliseconds(static_cast<std::int64_t>(number));
}

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
      .number(static_cast<std::uint64_t>(std::max<std::int64_t>(meta.timeout.count(), 0)))
      .number(static_cast<std::uint64_t>(std::max<std::int64_t>(meta.max_total.count(), 0)))
      .text(meta.method)
      .byte(meta.stream ? 1 : 0)
      .take();
}

std::optional<CallMeta> decode_call_meta(std::string_view meta) {
  MetaReader in(meta);
  const std::string_view caller = in.text();
  const std::uint64_t caller_cap = in.number();
  const auto timeout = duration(in.number());
  const auto max_total = duration(in.number());
  const std::string_view method = in.text();
  const auto stream = flag(in.byte());
  if (!in.complete() || caller_cap > static_cast<std::uint64_t>(std::numeric_limits<int>::max()) ||
      !timeout || !max_total || !stream)
    return std::nullopt;
  return CallMeta{std::string(caller), static_cast<int>(caller_cap), *timeout,
                  *max_total,          std::string(method),          *stream};
}

// status, kind, whether an error code follows its place; the reply's size; the code or 0.
std::string encode_outcome(const CallOutcome& outcome) {
  return MetaWriter()
      .byte(static_cast<std::uint8_t>(outcome.status))
      .byte(static_cast<std::uint8_t>(outcome.kind))
      .byte(outcome.error_code ? 1 : 0)
      .number(outcome.response_bytes)
      .number(static_cast<std::uint64_t>(outcome.error_code.value_or(0)))
      .take();
}

std::optional<CallOutcome> decode_outcome(std::string_view meta) {
  MetaReader in(meta);
  const auto status = enum_in_range(in.byte(), CallStatus::kDisconnected);
  const auto kind = enum_in_range(in.byte(), ReplyKind::kToolError);
  const auto has_code = flag(in.byte());
  const std::uint64_t response_bytes = in.number();
  const auto code = static_cast<std::int64_t>(in.number());
  if (!in.complete() || !status || !kind || !has_code || (!*has_code && code != 0))
    return std::nullopt;
  CallOutcome outcome{*status, response_bytes, *kind};
  if (*has_code) outcome.error_code = code;
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
