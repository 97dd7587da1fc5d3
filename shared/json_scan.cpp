#include "shared/json_scan.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>

#include "shared/utf8.hpp"

namespace sb {
namespace {

constexpr std::uint64_t kEveryByte = 0x0101010101010101ULL;
constexpr std::uint64_t kHighBits = 0x8080808080808080ULL;

// True when some byte of `word` is below `limit` (limit <= 128).
constexpr bool has_byte_below(std::uint64_t word, std::uint8_t limit) {
  return ((word - kEveryByte * limit) & ~word & kHighBits) != 0;
}

constexpr bool has_byte(std::uint64_t word, char byte) {
  return has_byte_below(word ^ (kEveryByte * static_cast<std::uint8_t>(byte)), 1);
}

// Eight string bytes that are plain printable ASCII need no closer look: no quote, no
// backslash, no control character, nothing that starts a multi-byte UTF-8 sequence.
constexpr bool plain_ascii(std::uint64_t word) {
  return (word & kHighBits) == 0 && !has_byte_below(word, 0x20) && !has_byte(word, '"') &&
         !has_byte(word, '\\');
}

// The same test for sixteen bytes at once, in one vector register where the target has
// them (SSE2 on every x86-64): a screenshot's base64 is megabytes of such bytes.
using Bytes16 = unsigned char __attribute__((vector_size(16)));
constexpr std::size_t kVectorBytes = sizeof(Bytes16);

bool plain_ascii16(const char* at) {
  Bytes16 bytes;
  std::memcpy(&bytes, at, sizeof bytes);
  const auto special = (bytes < 0x20) | (bytes >= 0x80) | (bytes == '"') | (bytes == '\\');
  std::uint64_t halves[2];
  std::memcpy(halves, &special, sizeof halves);
  return (halves[0] | halves[1]) == 0;
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

std::optional<std::uint16_t> hex4(std::string_view digits) {
  std::uint16_t value = 0;
  if (digits.size() != 4) return std::nullopt;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + 4, value, 16);
  if (error != std::errc() || end != digits.data() + 4) return std::nullopt;
  return value;
}

}  // namespace

template <typename Integer>
std::optional<Integer> integer_token(std::string_view token) {
  if (token.find_first_of(".eE") != std::string_view::npos) return std::nullopt;
  Integer value{};
  const auto [end, error] = std::from_chars(token.data(), token.data() + token.size(), value);
  if (error != std::errc() || end != token.data() + token.size()) return std::nullopt;
  return value;
}
template std::optional<std::int64_t> integer_token(std::string_view);
template std::optional<std::uint64_t> integer_token(std::string_view);

namespace {

// A number must have a finite value as a double unless it is an exact 64-bit integer:
// nlohmann::json, which read these messages before, refused the others ("1e400").
bool representable(std::string_view token) {
  if (integer_token<std::int64_t>(token) || integer_token<std::uint64_t>(token)) return true;
  double value = 0;
  const auto [end, error] = std::from_chars(token.data(), token.data() + token.size(), value);
  if (error == std::errc()) return true;
  // Out of range: an underflow rounds to zero and is fine, an overflow is not.
  const std::string copy(token);
  return std::isfinite(std::strtod(copy.c_str(), nullptr));
}

}  // namespace

void JsonScanner::skip_space() {
  while (position_ < text_.size() && is_json_space(text_[position_])) ++position_;
}

void JsonScanner::skip_byte_order_mark() {
  if (position_ == 0 && text_.starts_with("\xEF\xBB\xBF")) position_ = 3;
}

bool JsonScanner::value(int depth) {
  if (position_ >= text_.size()) return false;
  switch (text_[position_]) {
    case '{':
      return object(depth + 1, [&](std::string_view, std::size_t) { return value(depth + 1); });
    case '[':
      return array(depth + 1);
    case '"':
      return string_token(nullptr).has_value();
    case 't':
      return literal("true");
    case 'f':
      return literal("false");
    case 'n':
      return literal("null");
    default:
      return number();
  }
}

bool JsonScanner::array(int depth) {
  if (depth > max_nesting_) return false;
  ++position_;  // '['
  skip_space();
  if (eat(']')) return true;
  for (;;) {
    if (!value(depth)) return false;
    skip_space();
    if (eat(',')) {
      skip_space();
      continue;
    }
    return eat(']');
  }
}

std::optional<std::string_view> JsonScanner::string_token(std::string* decoded) {
  if (!eat('"')) return std::nullopt;
  const std::size_t begin = position_;
  bool escaped = false;
  for (;;) {
    while (position_ + kVectorBytes <= text_.size() && plain_ascii16(text_.data() + position_))
      position_ += kVectorBytes;
    while (position_ + 8 <= text_.size()) {
      std::uint64_t word;
      std::memcpy(&word, text_.data() + position_, sizeof word);
      if (!plain_ascii(word)) break;
      position_ += 8;
    }
    if (position_ >= text_.size()) return std::nullopt;
    const auto byte = static_cast<unsigned char>(text_[position_]);
    if (byte == '"') break;
    if (byte < 0x20) return std::nullopt;
    if (byte == '\\') {
      if (!escape()) return std::nullopt;
      escaped = true;
    } else if (byte >= 0x80) {
      if (!utf8_sequence()) return std::nullopt;
    } else {
      ++position_;
    }
  }
  const auto contents = text_.substr(begin, position_ - begin);
  ++position_;  // the closing quote
  if (!escaped || decoded == nullptr) return contents;
  const auto quoted = text_.substr(begin - 1, contents.size() + 2);
  const auto parsed = nlohmann::json::parse(quoted, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_string()) return std::nullopt;
  *decoded = parsed.get<std::string>();
  return std::string_view(*decoded);
}

bool JsonScanner::escape() {
  if (position_ + 1 >= text_.size()) return false;
  const char kind = text_[position_ + 1];
  if (kind != 'u') {
    position_ += 2;
    return std::string_view("\"\\/bfnrt").find(kind) != std::string_view::npos;
  }
  const auto unit = hex4(text_.substr(position_ + 2, 4));
  if (!unit) return false;
  position_ += 6;
  if (*unit >= 0xDC00 && *unit <= 0xDFFF) return false;  // a low surrogate alone
  if (*unit < 0xD800 || *unit > 0xDBFF) return true;
  // A high surrogate must be followed by an escaped low surrogate.
  if (!text_.substr(position_).starts_with("\\u")) return false;
  const auto low = hex4(text_.substr(position_ + 2, 4));
  if (!low || *low < 0xDC00 || *low > 0xDFFF) return false;
  position_ += 6;
  return true;
}

// One multi-byte UTF-8 sequence (RFC 3629: no overlongs, no surrogates, <= U+10FFFF).
bool JsonScanner::utf8_sequence() {
  const Utf8Sequence sequence = utf8_sequence_at(text_.substr(position_));
  if (!sequence.whole) return false;
  position_ += sequence.length;
  return true;
}

bool JsonScanner::number() {
  const std::size_t begin = position_;
  if (!number_grammar()) return false;
  return numbers_ == JsonNumbers::kGrammatical ||
         representable(text_.substr(begin, position_ - begin));
}

bool JsonScanner::number_grammar() {
  eat('-');
  if (eat('0')) {
    // a leading zero stands alone
  } else if (!digits()) {
    return false;
  }
  if (eat('.') && !digits()) return false;
  if (eat('e') || eat('E')) {
    if (!eat('+')) eat('-');
    if (!digits()) return false;
  }
  return true;
}

bool JsonScanner::digits() {
  const std::size_t begin = position_;
  while (position_ < text_.size() && is_digit(text_[position_])) ++position_;
  return position_ > begin;
}

bool JsonScanner::literal(std::string_view word) {
  if (!text_.substr(position_).starts_with(word)) return false;
  position_ += word.size();
  return true;
}

}  // namespace sb
