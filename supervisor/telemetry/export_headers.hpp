// The headers every export carries (`[telemetry] headers_file`, docs/observability.md,
// "Configuration"): a collector's API key, read from a file so that it is never on a
// command line or in a log. One `Name: value` a line; blank lines and lines starting with
// `#` are skipped.
#pragma once

#include <filesystem>
#include <string>
#include <variant>

#include "supervisor/telemetry/otlp_exporter.hpp"

namespace sb::supervisor {

inline constexpr std::size_t kMaxExportHeaders = 32;

// The headers, or why the file cannot be used (its path and the line's number; never a
// value).
std::variant<ExportHeaders, std::string> read_export_headers(const std::filesystem::path& path);

}  // namespace sb::supervisor
