#include "shared/json_string.hpp"

#include <cstdint>

#include "shared/utf8.hpp"

namespace sb {
namespace {

constexpr std::string_view kReplacement = "\xef\xbf\xbd";  // U+FFFD

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
      const Utf8Sequence sequence = utf8_sequence_at(text.substr(i));
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
