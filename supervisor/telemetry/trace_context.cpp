#include "supervisor/telemetry/trace_context.hpp"

#include <algorithm>

namespace sb::supervisor {
namespace {

constexpr std::size_t kVersion00Length = 55;  // 2 + 1 + 32 + 1 + 16 + 1 + 2

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;  // upper case is not allowed either
}

// `text` (lower-case hex, two digits a byte) into `out`; false on anything else.
template <std::size_t N>
bool read_hex(std::string_view text, std::array<std::uint8_t, N>& out) {
  if (text.size() != 2 * N) return false;
  for (std::size_t i = 0; i < N; ++i) {
    const int high = hex_value(text[2 * i]);
    const int low = hex_value(text[2 * i + 1]);
    if (high < 0 || low < 0) return false;
    out[i] = static_cast<std::uint8_t>(high * 16 + low);
  }
  return true;
}

template <std::size_t N>
bool all_zero(const std::array<std::uint8_t, N>& id) {
  return std::all_of(id.begin(), id.end(), [](std::uint8_t byte) { return byte == 0; });
}

template <std::size_t N>
void append_hex(std::string& out, const std::array<std::uint8_t, N>& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  for (const std::uint8_t byte : bytes) {
    out += kDigits[byte >> 4];
    out += kDigits[byte & 0xf];
  }
}

bool key_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '*' ||
         c == '/';
}

// A list-member's key: lower-case letters, digits and _-*/ starting with a letter or (a
// multi-tenant key) a digit, at most 256, with at most one '@' (tenant@system, the system
// at most 14 and starting with a letter).
bool valid_key(std::string_view key) {
  if (key.empty() || key.size() > 256) return false;
  const auto at = key.find('@');
  const std::string_view tenant = key.substr(0, at);
  if (tenant.empty() || !std::all_of(tenant.begin(), tenant.end(), key_char)) return false;
  if (at == std::string_view::npos) return tenant[0] >= 'a' && tenant[0] <= 'z';
  if (tenant.size() > 241) return false;
  const std::string_view system = key.substr(at + 1);
  return !system.empty() && system.size() <= 14 && system[0] >= 'a' && system[0] <= 'z' &&
         std::all_of(system.begin(), system.end(), key_char);
}

// A value: printable ASCII but ',' and '=', at most 256, not ending in a space.
bool valid_value(std::string_view value) {
  if (value.empty() || value.size() > 256 || value.back() == ' ') return false;
  return std::all_of(value.begin(), value.end(),
                     [](char c) { return c >= 0x20 && c <= 0x7e && c != ',' && c != '='; });
}

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// Whether `header` is a tracestate to pass on: list-members key=value, separated by commas
// with optional spaces around (empty members allowed), each key once, within the bounds.
bool valid_tracestate(std::string_view header) {
  if (header.size() > kMaxTracestateBytes) return false;
  std::size_t members = 0;
  std::array<std::string_view, kMaxTracestateMembers> keys{};
  while (true) {
    const auto comma = header.find(',');
    const std::string_view member = trimmed(header.substr(0, comma));
    if (!member.empty()) {
      const auto equals = member.find('=');
      if (equals == std::string_view::npos) return false;
      const std::string_view key = member.substr(0, equals);
      if (!valid_key(key) || !valid_value(member.substr(equals + 1))) return false;
      if (members == kMaxTracestateMembers) return false;
      if (std::find(keys.begin(), keys.begin() + static_cast<long>(members), key) !=
          keys.begin() + static_cast<long>(members))
        return false;
      keys[members++] = key;
    }
    if (comma == std::string_view::npos) return true;
    header.remove_prefix(comma + 1);
  }
}

}  // namespace

std::optional<TraceContext> read_trace_context(std::string_view traceparent,
                                               std::string_view tracestate) {
  traceparent = trimmed(traceparent);
  if (traceparent.size() < kVersion00Length) return std::nullopt;
  std::array<std::uint8_t, 1> version{};
  if (!read_hex(traceparent.substr(0, 2), version) || version[0] == 0xff) return std::nullopt;
  if (version[0] == 0 && traceparent.size() != kVersion00Length) return std::nullopt;
  if (traceparent.size() > kVersion00Length && traceparent[kVersion00Length] != '-')
    return std::nullopt;
  if (traceparent[2] != '-' || traceparent[35] != '-' || traceparent[52] != '-')
    return std::nullopt;
  TraceContext context;
  std::array<std::uint8_t, 1> flags{};
  if (!read_hex(traceparent.substr(3, 32), context.trace_id) ||
      !read_hex(traceparent.substr(36, 16), context.parent_id) ||
      !read_hex(traceparent.substr(53, 2), flags) || all_zero(context.trace_id) ||
      all_zero(context.parent_id))
    return std::nullopt;
  context.sampled = (flags[0] & 0x01) != 0;
  if (valid_tracestate(tracestate)) context.tracestate = std::string(trimmed(tracestate));
  return context;
}

std::string render_traceparent(const TraceId& trace, const SpanId& span, bool sampled) {
  std::string out = "00-";
  out.reserve(kVersion00Length);
  append_hex(out, trace);
  out += '-';
  append_hex(out, span);
  out += sampled ? "-01" : "-00";
  return out;
}

TraceIds::TraceIds() : random_(std::random_device{}()) {}

TraceId TraceIds::next_trace() {
  TraceId id{};
  do {
    for (std::size_t i = 0; i < id.size(); i += 8) {
      const std::uint64_t bits = random_();
      for (std::size_t j = 0; j < 8; ++j) id[i + j] = static_cast<std::uint8_t>(bits >> (8 * j));
    }
  } while (all_zero(id));
  return id;
}

SpanId TraceIds::next_span() {
  SpanId id{};
  do {
    const std::uint64_t bits = random_();
    for (std::size_t j = 0; j < 8; ++j) id[j] = static_cast<std::uint8_t>(bits >> (8 * j));
  } while (all_zero(id));
  return id;
}

}  // namespace sb::supervisor
