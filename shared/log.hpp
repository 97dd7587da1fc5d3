// Diagnostic log lines on stderr: "<UTC time> <LEVEL> <message> key=value ...".
// Secrets never reach this function: callers pass names, peers and codes only.
#pragma once

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <optional>
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

// Lets a line that a peer can make repeat at will through at most once per interval, so
// that a misbehaving computer or caller cannot flood the log.
class LogThrottle {
 public:
  explicit LogThrottle(std::chrono::steady_clock::duration interval = std::chrono::minutes(1))
      : interval_(interval) {}
  // Counts one occurrence. When a line is due, returns how many occurred since the last
  // line (this one included); otherwise nothing.
  std::optional<std::uint64_t> due();

 private:
  std::chrono::steady_clock::duration interval_;
  std::optional<std::chrono::steady_clock::time_point> last_line_;
  std::uint64_t count_ = 0;
};

// Lets through at most `lines` per interval of what a peer writes that is worth reading (a
// server's stderr) and counts the rest, so that a chatty peer cannot flood the log either.
class LogAllowance {
 public:
  explicit LogAllowance(std::uint64_t lines,
                        std::chrono::steady_clock::duration interval = std::chrono::minutes(1))
      : lines_(lines), interval_(interval) {}
  struct Verdict {
    bool write = false;                 // this line is within the allowance
    bool first_withheld = false;        // this line is the first of its interval held back
    std::uint64_t withheld_before = 0;  // held back in the interval that ended just now
  };
  Verdict take();

 private:
  std::uint64_t lines_;
  std::chrono::steady_clock::duration interval_;
  std::optional<std::chrono::steady_clock::time_point> interval_start_;
  std::uint64_t written_ = 0;
  std::uint64_t withheld_ = 0;
};

// UTC RFC 3339 with milliseconds, e.g. 2026-10-03T09:15:02.123Z.
std::string utc_timestamp_now();

}  // namespace sb
