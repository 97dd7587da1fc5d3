#include "supervisor/config/messages.hpp"

#include <cstdio>

#include "supervisor/config/config.hpp"

namespace sb::config {

// A name as a double-quoted string with escapes, so that an odd name (a space, a quote, a
// control character) is still unambiguous inside a message.
std::string in_quotes(std::string_view text) {
  std::string out = "\"";
  for (const unsigned char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\0':
        out += "\\0";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u{%x}", c);
          out += escaped;
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  out += '"';
  return out;
}

// `[[client]] "name"`: the owner prefix of a block's messages.
std::string block_owner(std::string_view block, std::string_view name) {
  return std::string(block) + " " + in_quotes(name);
}

// The chain is joined with ": ", outermost first; an empty owner is left out.
[[noreturn]] void fail(std::string_view owner, std::string_view problem) {
  if (owner.empty()) throw ConfigError(std::string(problem));
  throw ConfigError(std::string(owner) + ": " + std::string(problem));
}

std::string join(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += separator;
    out += item;
  }
  return out;
}

}  // namespace sb::config
