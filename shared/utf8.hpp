// Where a UTF-8 sequence ends, as Unicode's Table 3-7 has well-formed UTF-8: no overlong
// forms, no surrogates, nothing past U+10FFFF. What the JSON scanner refuses and the JSON
// string writer replaces.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace sb {

struct Utf8Sequence {
  std::size_t length = 0;
  bool whole = false;  // well-formed; otherwise `length` is its longest well-formed start
};

// The sequence that starts `text` at a byte of 0x80 or more: its length when it is
// well-formed, else the length of its longest well-formed start, at least its first byte
// (what Unicode's "maximal subpart" practice replaces as one).
inline Utf8Sequence utf8_sequence_at(std::string_view text) {
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
    const std::uint8_t byte = at(i);
    if (byte < (i == 1 ? low : 0x80) || byte > (i == 1 ? high : 0xbf)) return {i, false};
  }
  return {length, true};
}

}  // namespace sb
