#include "shared/log.hpp"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <utility>

namespace sb {

std::string utc_timestamp_now() {
  using namespace std::chrono;
  const auto now = system_clock::now();
  const auto millis = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
  const std::time_t seconds = system_clock::to_time_t(now);
  std::tm parts{};
  ::gmtime_r(&seconds, &parts);
  char out[64];  // room for any int in each field, though a date needs 24
  std::snprintf(out, sizeof out, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", parts.tm_year + 1900,
                parts.tm_mon + 1, parts.tm_mday, parts.tm_hour, parts.tm_min, parts.tm_sec,
                int(millis));
  return out;
}

void log(LogLevel level, std::string_view message, std::initializer_list<LogField> fields) {
  static constexpr const char* kNames[] = {"INFO", "WARN", "ERROR"};
  std::string line = utc_timestamp_now();
  line += ' ';
  line += kNames[static_cast<int>(level)];
  line += ' ';
  line += message;
  for (const auto& [key, value] : fields) {
    line += ' ';
    line += key;
    line += '=';
    line += value;
  }
  line += '\n';
  // One write per line so lines from several processes on one stderr do not interleave.
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

std::optional<std::uint64_t> LogThrottle::due() {
  ++count_;
  const auto now = std::chrono::steady_clock::now();
  if (last_line_ && now - *last_line_ < interval_) return std::nullopt;
  last_line_ = now;
  return std::exchange(count_, 0);
}

LogAllowance::Verdict LogAllowance::take() {
  Verdict verdict;
  const auto now = std::chrono::steady_clock::now();
  if (!interval_start_ || now - *interval_start_ >= interval_) {
    interval_start_ = now;
    verdict.withheld_before = std::exchange(withheld_, 0);
    written_ = 0;
  }
  if (written_ < lines_) {
    ++written_;
    verdict.write = true;
  } else {
    verdict.first_withheld = ++withheld_ == 1;
  }
  return verdict;
}

}  // namespace sb
