// Small text helpers every part uses, each written once: ASCII only, no locale.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace sb {

// Without leading and trailing ASCII whitespace (space, \t, \r, \n, \f, \v).
std::string_view trim(std::string_view text);
std::string ascii_lowercase(std::string_view text);
// Non-empty and only 0-9.
bool all_digits(std::string_view text);
// The value of one hex digit (either case), or -1.
int hex_digit_value(char c);
// Lowercase hex of `bytes`.
std::string to_hex(const unsigned char* bytes, std::size_t size);
// Whether `text` matches `pattern`, in which `*` stands for any run of characters (none
// included) and every other byte for itself. At worst in time their sizes' product.
bool glob_matches(std::string_view pattern, std::string_view text);
// Whether every text `narrower` matches is matched by `pattern` too (both `*` patterns).
bool glob_includes(std::string_view pattern, std::string_view narrower);
// The bytes `text` encodes in standard Base64 (RFC 4648 §4), read strictly: whole groups
// of four, padding only at the end, and no bits left over; none for anything else.
std::optional<std::string> decode_base64(std::string_view text);
// `bytes` in standard Base64 with padding (RFC 4648 §4).
std::string encode_base64(std::string_view bytes);
// The bytes of unpadded base64url text (RFC 4648 §5, as JOSE writes it: RFC 7515 §2),
// strictly; none for anything else.
std::optional<std::string> decode_base64url(std::string_view text);
// `bytes` as unpadded base64url text.
std::string encode_base64url(std::string_view bytes);
// A leading "~/" becomes `home`/; with `home` empty, "~/x" becomes "x".
std::filesystem::path expand_home(std::string_view path, std::string_view home);

}  // namespace sb
