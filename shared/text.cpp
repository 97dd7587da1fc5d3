#include "shared/text.hpp"

#include <openssl/evp.h>

#include <algorithm>

namespace sb {

std::string_view trim(std::string_view text) {
  constexpr std::string_view kWhitespace = " \t\r\n\f\v";
  const auto first = text.find_first_not_of(kWhitespace);
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(kWhitespace);
  return text.substr(first, last - first + 1);
}

std::string ascii_lowercase(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

bool all_digits(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

int hex_digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string to_hex(const unsigned char* bytes, std::size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(size * 2);
  for (std::size_t i = 0; i < size; ++i) {
    out.push_back(kDigits[bytes[i] >> 4]);
    out.push_back(kDigits[bytes[i] & 0x0f]);
  }
  return out;
}

std::filesystem::path expand_home(std::string_view path, std::string_view home) {
  if (!path.starts_with("~/")) return std::filesystem::path(path);
  const std::string_view rest = path.substr(2);
  // With HOME unset, "~/x" is the relative path "x" (docs/configuration.md, "Environment").
  if (home.empty()) return std::filesystem::path(rest);
  return std::filesystem::path(home) / rest;
}

bool glob_matches(std::string_view pattern, std::string_view text) {
  // Greedy, going back only to the last star: a later star can match whatever an earlier
  // one would have, so no other choice needs revisiting.
  std::size_t p = 0;
  std::size_t t = 0;
  std::size_t star = std::string_view::npos;  // in pattern
  std::size_t star_text = 0;                  // where that star's run ends now
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      star_text = t;
    } else if (p < pattern.size() && pattern[p] == text[t]) {
      ++p;
      ++t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++star_text;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

// A star of `narrower` becomes a byte `pattern` does not hold: only a star of `pattern` can
// match it, as only a star can match every text that star could stand for. So `pattern`
// matches the result exactly when it matches everything `narrower` does.
bool glob_includes(std::string_view pattern, std::string_view narrower) {
  constexpr char kAnyRun = '\0';
  if (pattern.find(kAnyRun) != std::string_view::npos) return false;
  std::string text(narrower);
  std::replace(text.begin(), text.end(), '*', kAnyRun);
  return glob_matches(pattern, text);
}

std::string encode_base64(std::string_view bytes) {
  std::string encoded(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int size = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(encoded.data()),
                                   reinterpret_cast<const unsigned char*>(bytes.data()),
                                   static_cast<int>(bytes.size()));
  encoded.resize(static_cast<std::size_t>(std::max(size, 0)));
  return encoded;
}

std::optional<std::string> decode_base64(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::size_t padding = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '=') {
      if (i + 2 < text.size()) return std::nullopt;
      ++padding;
      continue;
    }
    const bool alphabet = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                          (c >= '0' && c <= '9') || c == '+' || c == '/';
    if (padding > 0 || !alphabet) return std::nullopt;
  }
  std::string decoded(text.size() / 4 * 3, '\0');
  const int size = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(decoded.data()),
                                   reinterpret_cast<const unsigned char*>(text.data()),
                                   static_cast<int>(text.size()));
  if (size < 0) return std::nullopt;
  decoded.resize(static_cast<std::size_t>(size) - padding);
  // Encoded again, it must be the same text: nothing was in the bits padding leaves over.
  std::string again(text.size() + 1, '\0');
  EVP_EncodeBlock(reinterpret_cast<unsigned char*>(again.data()),
                  reinterpret_cast<const unsigned char*>(decoded.data()),
                  static_cast<int>(decoded.size()));
  again.resize(text.size());
  if (again != text) return std::nullopt;
  return decoded;
}

std::optional<std::string> decode_base64url(std::string_view text) {
  std::string standard(text);
  for (char& c : standard) {
    if (c == '+' || c == '/' || c == '=') return std::nullopt;
    if (c == '-') c = '+';
    if (c == '_') c = '/';
  }
  if (standard.size() % 4 == 1) return std::nullopt;
  standard.append((4 - standard.size() % 4) % 4, '=');
  return decode_base64(standard);
}

std::string encode_base64url(std::string_view bytes) {
  std::string text = encode_base64(bytes);
  while (!text.empty() && text.back() == '=') text.pop_back();
  for (char& c : text) {
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  return text;
}

}  // namespace sb
