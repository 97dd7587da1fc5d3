#include "shared/json_string.hpp"

#include <cstdint>

namespace sb {
namespace {

constexpr std::string_view kReplacement = "\xef\xbf\xbd";  // U+FFFD

bool continuation(std::uint8_t byte, std::uint8_t low = 0x80, std::uint8_t high = 0xbf) {
  return byte >= low && byte <= high;
}

struct Sequence {
  std::size_t length = 0;
  bool whole = false;
};

// The UTF-8 sequence that starts `text` at a byte of 0x80 or more: its length when it is
// well-formed, else the length of its longest well-formed start (at least its first
// byte), which is replaced as one (Unicode's "maximal subpart" practice).
Sequence sequence_at(std::string_view text) {
  const auto at = [&](std::size_t i) {
    return i < text.size() ? static_cast<std::uint8_t>(text[i]) : std::uint8_t{0};
  };
  const std::uint8_t lead = at(0);
  std::size_t length = 0;
  std::uint8_t low = 0x80;  // the second byte's range; later ones are 80..BF
  std::uint8_t high = 0xbf;
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    if (lead == 0xe0) low = 0xa0;   // no overlong forms
    if (lead == 0xed) high = 0x9f;  // no surrogates
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    if (lead == 0xf0) low = 0x90;   // no overlong forms
    if (lead == 0xf4) high = 0x8f;  // nothing past U+10FFFF
  } else {
    return {1, false};
  }
  for (std::size_t i = 1; i < length; ++i) {
    if (!continuation(at(i), i == 1 ? low : std::uint8_t{0x80}, i == 1 ? high : std::uint8_t{0xbf}))
      return {i, false};
  }
  return {length, true};
}

void append_control(std::string& out, char c) {
  static constexpr char kHex[] = "0123456789abcdef";
  switch (c) {
    case '\b':
      out += "\\b";
      return;
    case '\f':
      out += "\\f";
      return;
    case '\n':
      out += "\\n";
      return;
    case '\r':
      out += "\\r";
      return;
    case '\t':
      out += "\\t";
      return;
    default:
      out += "\\u00";
      out += kHex[(c >> 4) & 0x0f];
      out += kHex[c & 0x0f];
  }
}

}  // namespace

void append_json_string(std::string& out, std::string_view text) {
  out += '"';
  std::size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    const auto byte = static_cast<std::uint8_t>(c);
    if (byte >= 0x80) {
      const Sequence sequence = sequence_at(text.substr(i));
      if (sequence.whole) {
        out.append(text.substr(i, sequence.length));
      } else {
        out += kReplacement;
      }
      i += sequence.length;
      continue;
    }
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (byte < 0x20) {
      append_control(out, c);
    } else {
      out += c;
    }
    ++i;
  }
  out += '"';
}

}  // namespace sb
