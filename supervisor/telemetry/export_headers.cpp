#include "supervisor/telemetry/export_headers.hpp"

#include <algorithm>
#include <sstream>

#include "shared/secret_file.hpp"
#include "shared/text.hpp"

namespace sb::supervisor {
namespace {

// An HTTP field name (RFC 9110 §5.1: a token).
bool header_name(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
  });
}

}  // namespace

std::variant<ExportHeaders, std::string> read_export_headers(const std::filesystem::path& path) {
  std::string text;
  std::string error;
  if (!read_secret_file(path, text, error)) return error;
  ExportHeaders headers;
  std::istringstream lines(text);
  int number = 0;
  for (std::string line; std::getline(lines, line);) {
    ++number;
    const std::string_view trimmed = trim(line);
    if (trimmed.empty() || trimmed.front() == '#') continue;
    const auto colon = trimmed.find(':');
    const std::string where = path.string() + " line " + std::to_string(number);
    if (colon == std::string_view::npos) return where + ": expected `Name: value`";
    const std::string_view name = trim(trimmed.substr(0, colon));
    const std::string_view value = trim(trimmed.substr(colon + 1));
    if (!header_name(name)) return where + ": not a header name";
    if (!valid_header_value(value)) return where + ": a value with control characters";
    if (headers.size() == kMaxExportHeaders)
      return path.string() + ": more than " + std::to_string(kMaxExportHeaders) + " headers";
    headers.emplace_back(std::string(name), std::string(value));
  }
  return headers;
}

}  // namespace sb::supervisor
