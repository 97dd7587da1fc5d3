// Diagnostic log lines on stderr: "<UTC time> <LEVEL> <message> key=value ...".
// Secrets never reach this function: callers pass names, peers and codes only.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace sb {

enum class LogLevel { kInfo, kWarn, kError };

using LogField = std::pair<std::string_view, std::string>;

void log(LogLevel level, std::string_view message, std::initializer_list<LogField> fields = {});

inline void log_info(std::string_view message, std::initializer_list<LogField> fields = {}) {
  log(LogLevel::kInfo, message, fields);
}
inline void log_warn(std::string_view message, std::initializer_list<LogField> fields = {}) {
  log(LogLevel::kWarn, message, fields);
}
inline void log_error(std::string_view message, std::initializer_list<LogField> fields = {}) {
  log(LogLevel::kError, message, fields);
}

// UTC RFC 3339 with milliseconds, e.g. 2026-10-03T09:15:02.123Z.
std::string utc_timestamp_now();

}  // namespace sb
