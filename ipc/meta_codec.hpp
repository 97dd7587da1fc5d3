// The binary layout of a frame's meta, shared by every codec (messages.cpp,
// supervisor_frames.cpp): fixed-width numbers and length-prefixed text in host byte order
// (both ends are on one machine), read strictly: every byte accounted for, every enum and
// flag in range. Also the layout of what crosses a switch in place
// (supervisor/switching/switch_state.hpp), which both ends likewise write on one machine.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

namespace sb::ipc {

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
  // No read so far went past the end.
  bool ok() const { return !failed_; }

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

inline std::optional<bool> flag(std::uint8_t number) {
  if (number > 1) return std::nullopt;
  return number == 1;
}

// Milliseconds that a std::chrono::milliseconds holds, counted from zero.
inline std::optional<std::chrono::milliseconds> duration(std::uint64_t number) {
  if (number > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
    return std::nullopt;
  return std::chrono::milliseconds(static_cast<std::int64_t>(number));
}

inline std::uint64_t duration_number(std::chrono::milliseconds value) {
  return static_cast<std::uint64_t>(std::max<std::int64_t>(value.count(), 0));
}

// A time on the steady clock, which is CLOCK_MONOTONIC: one clock for every process of the
// machine's boot, so the same instant whichever process reads it (what crosses a switch).
inline std::uint64_t steady_time_number(std::chrono::steady_clock::time_point time) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(time.time_since_epoch()).count());
}

inline std::optional<std::chrono::steady_clock::time_point> steady_time(std::uint64_t number) {
  if (number > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
    return std::nullopt;
  return std::chrono::steady_clock::time_point(
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::nanoseconds(static_cast<std::int64_t>(number))));
}

// A count an int holds.
inline std::optional<int> int_count(std::uint64_t number) {
  if (number > static_cast<std::uint64_t>(std::numeric_limits<int>::max())) return std::nullopt;
  return static_cast<int>(number);
}

}  // namespace sb::ipc
