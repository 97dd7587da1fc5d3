#include "harness/exposition_lines.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <stdexcept>

namespace harness {
namespace {

std::string escaped_label_value(std::string_view value) {
  std::string out;
  for (const char c : value) {
    if (c == '\\' || c == '"') out += '\\';
    out += c == '\n' ? std::string("\\n") : std::string(1, c);
  }
  return out;
}

bool is_letter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_label_name_char(char c) {
  return is_letter(c) || is_digit(c) || c == '_';
}
bool is_metric_name_char(char c) {
  return is_label_name_char(c) || c == ':';
}

bool is_label_name(std::string_view text) {
  return !text.empty() && !is_digit(text.front()) && std::ranges::all_of(text, is_label_name_char);
}

// The format is UTF-8; Prometheus drops a scrape whose label values are not.
bool is_valid_utf8(std::string_view text) {
  // The smallest code point each sequence length may encode: below it, the form is overlong.
  static constexpr std::array<char32_t, 5> kSmallest = {0, 0, 0x80, 0x800, 0x10000};
  for (std::size_t at = 0; at < text.size();) {
    const auto lead = static_cast<unsigned char>(text[at]);
    std::size_t length = 0;
    if (lead < 0x80) {
      length = 1;
    } else if ((lead & 0xE0) == 0xC0) {
      length = 2;
    } else if ((lead & 0xF0) == 0xE0) {
      length = 3;
    } else if ((lead & 0xF8) == 0xF0) {
      length = 4;
    } else {
      return false;
    }
    if (at + length > text.size()) return false;
    char32_t code = length == 1 ? lead : lead & (0x7F >> length);
    for (std::size_t k = 1; k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[at + k]);
      if ((next & 0xC0) != 0x80) return false;
      code = (code << 6) | (next & 0x3F);
    }
    if (code < kSmallest[length] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) {
      return false;
    }
    at += length;
  }
  return true;
}

// [+-]digits[.digits][e[+-]digits], with digits on at least one side of the point.
bool is_decimal_float(std::string_view text) {
  std::size_t at = 0;
  const auto skip_digits = [&] {
    const std::size_t start = at;
    while (at < text.size() && is_digit(text[at])) ++at;
    return at - start;
  };
  if (at < text.size() && (text[at] == '+' || text[at] == '-')) ++at;
  std::size_t mantissa_digits = skip_digits();
  if (at < text.size() && text[at] == '.') {
    ++at;
    mantissa_digits += skip_digits();
  }
  if (mantissa_digits == 0) return false;
  if (at < text.size() && (text[at] == 'e' || text[at] == 'E')) {
    ++at;
    if (at < text.size() && (text[at] == '+' || text[at] == '-')) ++at;
    if (skip_digits() == 0) return false;
  }
  return at == text.size();
}

std::int64_t timestamp_or_fail(std::string_view token, int line) {
  const std::string_view digits = token.starts_with('-') ? token.substr(1) : token;
  if (digits.empty() || !std::ranges::all_of(digits, is_digit)) {
    fail(line, "timestamp " + in_quotes(token) + " is not an integer");
  }
  std::int64_t value = 0;
  const auto read = std::from_chars(token.data(), token.data() + token.size(), value);
  if (read.ec != std::errc()) fail(line, "timestamp " + in_quotes(token) + " does not fit 64 bits");
  return value;
}

// Past the one space that must separate two tokens of a sample line.
std::string_view after_separator(std::string_view rest, int number) {
  if (rest.size() < 2 || rest[0] != ' ' || is_blank(rest[1])) {
    fail(number, "tokens must be separated by exactly one space");
  }
  return rest.substr(1);
}

// Reads `{name="value",...}` from `at` (the opening brace) into `labels`; returns the
// position after the closing brace.
std::size_t read_labels(std::string_view line, std::size_t at, int number, Labels& labels) {
  ++at;
  if (at < line.size() && line[at] == '}') fail(number, "empty label braces `{}`");
  while (true) {
    std::size_t name_end = at;
    while (name_end < line.size() && is_label_name_char(line[name_end])) ++name_end;
    const std::string name(line.substr(at, name_end - at));
    if (!is_label_name(name)) {
      fail(number, "invalid label name at " + in_quotes(line.substr(at, 16)));
    }
    // Names starting with "__" are Prometheus' own (__name__, relabelling scratch).
    if (name.starts_with("__")) fail(number, "label name " + in_quotes(name) + " is reserved");
    at = name_end;
    if (at >= line.size() || line[at] != '=') {
      fail(number, "expected `=` after label name " + in_quotes(name));
    }
    ++at;
    if (at >= line.size() || line[at] != '"') {
      fail(number, "value of label " + in_quotes(name) + " does not start with a double quote");
    }
    std::string value;
    for (++at;; ++at) {
      if (at >= line.size()) {
        fail(number, "value of label " + in_quotes(name) + " has no closing double quote");
      }
      if (line[at] == '"') break;
      if (line[at] != '\\') {
        value += line[at];
        continue;
      }
      const char escaped = ++at < line.size() ? line[at] : '\0';
      if (escaped == '\\' || escaped == '"') {
        value += escaped;
      } else if (escaped == 'n') {
        value += '\n';
      } else {
        fail(number, "value of label " + in_quotes(name) + " has escape " +
                         in_quotes(line.substr(at - 1, 2)) + "; only \\\\, \\\" and \\n exist");
      }
    }
    ++at;
    if (!labels.emplace(name, std::move(value)).second) {
      fail(number, "label " + in_quotes(name) + " given twice");
    }
    if (at < line.size() && line[at] == '}') return at + 1;
    if (at >= line.size() || line[at] != ',') {
      fail(number, "expected `,` or `}` after the value of label " + in_quotes(name));
    }
    ++at;
    if (at < line.size() && line[at] == '}') fail(number, "trailing comma before `}`");
  }
}

}  // namespace

[[noreturn]] void fail(int line, const std::string& what) {
  throw std::runtime_error("line " + std::to_string(line) + ": " + what);
}

// Appended rather than a `+` chain, which g++ 12 at -O3 flags with a false -Wrestrict.
std::string in_quotes(std::string_view text) {
  std::string out = "`";
  out += text;
  out += '`';
  return out;
}

// Shortest text that reads back as the same double, so a message shows the value as written.
std::string number_text(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  std::array<char, 32> buffer{};
  const auto written = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
  return std::string(buffer.data(), written.ptr);
}

// `name{a="1",b="2"}`, as the series would be written, for messages.
std::string series_text(std::string_view name, const Labels& labels) {
  std::string out(name);
  if (labels.empty()) return "`" + out + "`";
  out += '{';
  for (const auto& [label, value] : labels) {
    if (out.back() != '{') out += ',';
    out += label + "=\"" + escaped_label_value(value) + "\"";
  }
  return "`" + out + "}`";
}

bool is_metric_name(std::string_view text) {
  return !text.empty() && !is_digit(text.front()) && std::ranges::all_of(text, is_metric_name_char);
}

bool is_blank(char c) {
  return c == ' ' || c == '\t';
}

// Prometheus reads floats with Go's ParseFloat, which also takes "inf", "Infinity", hex and
// digit separators; the format promises readers only decimal numbers, NaN, +Inf and -Inf,
// so only those pass.
double float_or_fail(std::string_view token, int line, const std::string& what) {
  if (token == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (token == "+Inf") return kInfinity;
  if (token == "-Inf") return -kInfinity;
  if (!is_decimal_float(token)) fail(line, what + " " + in_quotes(token) + " is not a float");
  const std::string_view digits = token.starts_with('+') ? token.substr(1) : token;
  double value = 0;
  const auto read = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  // Go fails on overflow; underflow to zero would silently change the value just as much.
  if (read.ec != std::errc()) fail(line, what + " " + in_quotes(token) + " is out of range");
  return value;
}

// What makes a line unreadable whatever it holds. Blank lines are legal in the format but
// never written by a client library, so here they point at a bug in the writer.
void check_layout(std::string_view line, int number) {
  if (std::ranges::all_of(line, is_blank)) fail(number, "blank line");
  if (line.find('\r') != std::string_view::npos) {
    fail(number, "carriage return: lines end with \"\\n\" alone");
  }
  if (!is_valid_utf8(line)) fail(number, "not valid UTF-8");
  if (is_blank(line.front())) fail(number, "line starts with whitespace");
  if (is_blank(line.back())) fail(number, "line ends with whitespace");
}

std::string_view first_token(std::string_view rest) {
  return rest.substr(0, std::min(rest.find(' '), rest.find('\t')));
}

// The syntax of `name{labels} value [timestamp]`, before any family is consulted.
Sample read_sample(std::string_view line, int number) {
  Sample sample;
  const std::size_t name_end = std::min(line.find('{'), first_token(line).size());
  sample.name = line.substr(0, name_end);
  if (!is_metric_name(sample.name)) fail(number, "invalid metric name " + in_quotes(sample.name));
  std::size_t at = name_end;
  if (at < line.size() && line[at] == '{') at = read_labels(line, at, number, sample.labels);
  std::string_view rest = line.substr(at);
  const std::string series = series_text(sample.name, sample.labels);
  if (rest.empty()) fail(number, "sample " + series + " has no value");
  if (!is_blank(rest.front())) fail(number, "unexpected " + in_quotes(rest) + " after the labels");
  rest = after_separator(rest, number);
  const std::string_view value = first_token(rest);
  sample.value = float_or_fail(value, number, "value of " + series);
  rest.remove_prefix(value.size());
  if (rest.empty()) return sample;
  rest = after_separator(rest, number);
  const std::string_view timestamp = first_token(rest);
  sample.timestamp_ms = timestamp_or_fail(timestamp, number);
  rest.remove_prefix(timestamp.size());
  if (!rest.empty()) fail(number, "unexpected " + in_quotes(rest) + " after the timestamp");
  return sample;
}

}  // namespace harness
