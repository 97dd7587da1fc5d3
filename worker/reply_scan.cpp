#include "worker/reply_scan.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>

namespace sb::worker {
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

bool is_json_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

std::optional<std::uint16_t> hex4(std::string_view digits) {
  std::uint16_t value = 0;
  if (digits.size() != 4) return std::nullopt;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + 4, value, 16);
  if (error != std::errc() || end != digits.data() + 4) return std::nullopt;
  return value;
}

// A JSON number token that is a plain integer (no sign, fraction or exponent) in range.
template <typename Integer>
std::optional<Integer> integer_token(std::string_view token) {
  if (token.find_first_of(".eE") != std::string_view::npos) return std::nullopt;
  Integer value{};
  const auto [end, error] = std::from_chars(token.data(), token.data() + token.size(), value);
  if (error != std::errc() || end != token.data() + token.size()) return std::nullopt;
  return value;
}

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

class Scanner {
 public:
  Scanner(std::string_view text, int max_nesting) : text_(text), max_nesting_(max_nesting) {}

  std::optional<ScannedMessage> scan() {
    if (text_.starts_with("\xEF\xBB\xBF")) position_ = 3;  // a UTF-8 byte order mark
    skip_space();
    if (!at('{')) return std::nullopt;  // arrays and scalars are ignored, valid or not
    ScannedMessage message;
    message.object.begin = position_;
    TextSpan id_member;
    bool error_seen = false;
    bool result_is_error = false;
    const bool parsed = object(1, [&](std::string_view key, std::size_t member_begin) {
      if (key == "id") {
        if (message.has_id) return false;
        message.has_id = true;
        const std::size_t value_begin = position_;
        if (!value(1)) return false;
        message.id =
            integer_token<std::uint64_t>(text_.substr(value_begin, position_ - value_begin));
        id_member = {member_begin, position_};
        return true;
      }
      if (key == "result") {
        message.is_response = true;
        return flagged_member(1, "isError", result_is_error);
      }
      if (key == "error") {
        message.is_response = true;
        error_seen = true;
        return integer_member(1, "code", message.error_code);
      }
      return value(1);
    });
    if (!parsed) return std::nullopt;
    message.object.end = position_;
    skip_space();
    if (position_ != text_.size()) return std::nullopt;
    if (error_seen) {
      message.kind = ipc::ReplyKind::kRpcError;
    } else {
      message.error_code.reset();
      if (result_is_error) message.kind = ipc::ReplyKind::kToolError;
    }
    if (message.has_id) message.id_cut = cut_for(id_member);
    return message;
  }

 private:
  // Calls on_member(key, member_begin) at each member's value; it must consume the value.
  template <typename OnMember>
  bool object(int depth, OnMember&& on_member) {
    if (depth > max_nesting_) return false;
    ++position_;  // '{'
    skip_space();
    if (eat('}')) return true;
    for (;;) {
      const std::size_t member_begin = position_;
      std::string decoded;
      const auto key = string_token(&decoded);
      if (!key) return false;
      skip_space();
      if (!eat(':')) return false;
      skip_space();
      if (!on_member(*key, member_begin)) return false;
      skip_space();
      if (eat(',')) {
        skip_space();
        continue;
      }
      return eat('}');
    }
  }

  bool array(int depth) {
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

  // `depth` is how deeply the value's container is nested (0 for the top level).
  bool value(int depth) {
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

  // A member whose value may be an object with a boolean `flag` (result.isError).
  bool flagged_member(int depth, std::string_view flag, bool& flag_value) {
    flag_value = false;
    if (!at('{')) return value(depth);
    return object(depth + 1, [&](std::string_view key, std::size_t) {
      if (key == flag) flag_value = text_.substr(position_).starts_with("true");
      return value(depth + 1);
    });
  }

  // A member whose value may be an object with an integer `field` (error.code).
  bool integer_member(int depth, std::string_view field, std::optional<std::int64_t>& field_value) {
    field_value.reset();
    if (!at('{')) return value(depth);
    return object(depth + 1, [&](std::string_view key, std::size_t) {
      const std::size_t value_begin = position_;
      if (!value(depth + 1)) return false;
      if (key == field) {
        field_value =
            integer_token<std::int64_t>(text_.substr(value_begin, position_ - value_begin));
      }
      return true;
    });
  }

  // A string at the cursor. Returns its raw contents; when `decoded` is given and the
  // string has escapes, the decoded text is stored there and returned instead.
  std::optional<std::string_view> string_token(std::string* decoded) {
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

  bool escape() {
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
  bool utf8_sequence() {
    const auto byte_at = [&](std::size_t offset) {
      return static_cast<unsigned char>(text_[position_ + offset]);
    };
    const unsigned char lead = byte_at(0);
    std::size_t length = 0;
    unsigned char second_min = 0x80;
    unsigned char second_max = 0xBF;
    if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3;
      if (lead == 0xE0) second_min = 0xA0;
      if (lead == 0xED) second_max = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4;
      if (lead == 0xF0) second_min = 0x90;
      if (lead == 0xF4) second_max = 0x8F;
    } else {
      return false;
    }
    if (position_ + length > text_.size()) return false;
    if (byte_at(1) < second_min || byte_at(1) > second_max) return false;
    for (std::size_t offset = 2; offset < length; ++offset) {
      if (byte_at(offset) < 0x80 || byte_at(offset) > 0xBF) return false;
    }
    position_ += length;
    return true;
  }

  bool number() {
    const std::size_t begin = position_;
    if (!number_grammar()) return false;
    return representable(text_.substr(begin, position_ - begin));
  }

  bool number_grammar() {
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

  bool digits() {
    const std::size_t begin = position_;
    while (position_ < text_.size() && is_digit(text_[position_])) ++position_;
    return position_ > begin;
  }

  bool literal(std::string_view word) {
    if (!text_.substr(position_).starts_with(word)) return false;
    position_ += word.size();
    return true;
  }

  // The id member and one comma next to it, so that what remains is still one object.
  TextSpan cut_for(TextSpan member) const {
    std::size_t after = member.end;
    while (is_json_space(text_[after])) ++after;
    if (text_[after] == ',') return {member.begin, after + 1};
    std::size_t before = member.begin;
    while (is_json_space(text_[before - 1])) --before;
    if (text_[before - 1] == ',') return {before - 1, member.end};
    return member;  // the only member
  }

  void skip_space() {
    while (position_ < text_.size() && is_json_space(text_[position_])) ++position_;
  }

  bool at(char c) const { return position_ < text_.size() && text_[position_] == c; }

  bool eat(char c) {
    if (!at(c)) return false;
    ++position_;
    return true;
  }

  std::string_view text_;
  int max_nesting_;
  std::size_t position_ = 0;
};

}  // namespace

std::optional<ScannedMessage> scan_message(std::string_view text, int max_nesting) {
  return Scanner(text, max_nesting).scan();
}

std::string without_id(std::string_view text, const ScannedMessage& message) {
  const TextSpan cut =
      message.has_id ? message.id_cut : TextSpan{message.object.end, message.object.end};
  std::string body;
  body.reserve(message.object.end - message.object.begin - (cut.end - cut.begin));
  body.append(text.substr(message.object.begin, cut.begin - message.object.begin));
  body.append(text.substr(cut.end, message.object.end - cut.end));
  return body;
}

}  // namespace sb::worker
