// The checks several blocks share: names, in-flight caps, verifiers.
#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "supervisor/config/messages.hpp"
#include "supervisor/config/rules.hpp"

namespace sb::config {
namespace {

constexpr std::int64_t kMaxInflightLimit = 64;

bool only_chars(std::string_view text, std::string_view extra) {
  return std::all_of(text.begin(), text.end(), [extra](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || extra.find(c) != std::string_view::npos;
  });
}

}  // namespace

// Client and pod names. They appear in audit lines and logs, so keep them plain.
void check_principal_name(std::string_view name, std::string_view owner) {
  if (!name.empty() && name.size() <= 64 && only_chars(name, "._-")) return;
  fail(owner, "name must be 1-64 chars of [A-Za-z0-9._-]");
}

// Computer names are also bare TOML keys in a client's `computers`, where a `.` would make
// a dotted key (a nested table), so they may not contain one.
void check_computer_name(std::string_view name, std::string_view owner) {
  if (!name.empty() && name.size() <= 64 && only_chars(name, "_-")) return;
  if (name.find('.') != std::string_view::npos) {
    std::string dashed(name);
    std::replace(dashed.begin(), dashed.end(), '.', '-');
    fail(owner, "a computer name may not contain `.`: as a bare TOML key " + in_quotes(name) +
                    " would be a dotted key that makes a nested table; use " + in_quotes(dashed) +
                    " instead");
  }
  fail(owner, "a computer name must be 1-64 chars of [A-Za-z0-9_-]");
}

int checked_max_inflight(std::int64_t value, std::string_view owner, std::string_view meaning) {
  if (value >= 1 && value <= kMaxInflightLimit) return static_cast<int>(value);
  fail(owner, "`max_inflight` must be 1..=64 (" + std::string(meaning) + "), got " +
                  std::to_string(value));
}

// `context` is where the verifier sits, e.g. `[[computer]] "a": `secret_sha256``.
Verifier checked_verifier(std::string_view text, std::string_view context) {
  try {
    return parse_verifier(text);
  } catch (const std::invalid_argument& error) {
    fail(context, error.what());
  }
}

}  // namespace sb::config
