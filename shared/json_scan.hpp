// Reading JSON text without building a tree: a cursor that validates as it goes (RFC 8259,
// UTF-8, containers nested at most `max_nesting` deep) and lets its user pick out the few
// members it needs as it passes them. The project's one scanner: a computer's replies
// (worker/reply_scan.hpp) and a caller's plain tools/call (supervisor/mcp/call_scan.hpp) are
// read with it; everything else goes through nlohmann::json.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sb {

// A byte range [begin, end) of the scanned text.
struct TextSpan {
  std::size_t begin = 0;
  std::size_t end = 0;
};

// The four whitespace characters of RFC 8259.
constexpr bool is_json_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

// A JSON number token that is a plain integer (no fraction or exponent) in range.
template <typename Integer>
std::optional<Integer> integer_token(std::string_view token);
extern template std::optional<std::int64_t> integer_token(std::string_view);
extern template std::optional<std::uint64_t> integer_token(std::string_view);

// Which numbers a scan accepts: those nlohmann::json reads (the default, so that a scanned
// message reads the same as a parsed one), or any the grammar allows ("1e400" too).
enum class JsonNumbers { kRepresentable, kGrammatical };

class JsonScanner {
 public:
  JsonScanner(std::string_view text, int max_nesting,
              JsonNumbers numbers = JsonNumbers::kRepresentable)
      : text_(text), max_nesting_(max_nesting), numbers_(numbers) {}

  std::string_view text() const { return text_; }
  std::size_t position() const { return position_; }
  std::string_view since(std::size_t begin) const { return text_.substr(begin, position_ - begin); }
  bool at_end() const { return position_ == text_.size(); }
  bool at(char c) const { return position_ < text_.size() && text_[position_] == c; }
  bool eat(char c) {
    if (!at(c)) return false;
    ++position_;
    return true;
  }
  void skip_space();
  void skip_byte_order_mark();

  // An object at the cursor. Calls on_member(key, member_begin) with the cursor at each
  // member's value; it must consume the value (value() when it has no use for it). The key
  // is decoded when it has escapes. `depth` is the object's own nesting (1 at the top).
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

  // Any value at the cursor; `depth` is how deeply its container is nested (0 at the top).
  bool value(int depth);
  // A string at the cursor. Returns its raw contents; when `decoded` is given and the
  // string has escapes, the decoded text is stored there and returned instead.
  std::optional<std::string_view> string_token(std::string* decoded);

 private:
  bool array(int depth);
  bool escape();
  bool utf8_sequence();
  bool number();
  bool number_grammar();
  bool digits();
  bool literal(std::string_view word);

  std::string_view text_;
  int max_nesting_;
  JsonNumbers numbers_;
  std::size_t position_ = 0;
};

}  // namespace sb
