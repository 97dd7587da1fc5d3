// The audit log: JSON lines, one writer (this process), file mode 0600 at creation, or
// stdout when no audit_path is set. Workers report their sessions' events over IPC and
// the supervisor writes them, so lines never interleave. Lines are collected during one
// turn of the event loop and written together at its end, in one write: under load one
// write carries the lines of many calls. What a crash can lose is said in docs/protocol.md
// ("Audit log"). Also the rate cap on auth-failure lines.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "shared/timings.hpp"

namespace sb::supervisor {

// The fields of a "call" line (docs/protocol.md, "Audit log").
struct CallRecord {
  std::string_view principal;
  std::string_view computer;
  std::string_view tool;
  std::string_view outcome;
  std::optional<std::int64_t> error_code;  // null when there is none
  std::int64_t ms = 0;
  std::size_t response_bytes = 0;
  const nlohmann::json& args;  // the arguments' text, "" or null (audit_args off)
};

class AuditLog {
 public:
  // Throws std::runtime_error when the file cannot be opened.
  AuditLog(boost::asio::io_context& io, const std::optional<std::filesystem::path>& path,
           std::chrono::milliseconds auth_window = Timings{}.auth_window);
  ~AuditLog();
  AuditLog(const AuditLog&) = delete;
  AuditLog& operator=(const AuditLog&) = delete;

  // Writes {"ts":..,"event":..,...fields}.
  void write(std::string_view event, nlohmann::json fields);
  // The one line every call writes, composed without a JSON tree: building and dumping an
  // object of ten members cost ~2 µs, a third of the supervisor's JSON per call
  // (docs/benchmarks.md). The same text as write("call", ...): keys in the same order.
  void write_call(const CallRecord& record);
  // Writes a line a worker composed; anything that is not one JSON object is refused.
  void write_from_worker(std::string_view line);
  // vm_auth_fail / client_auth_fail, at most 20 per window (60 s); the number suppressed
  // is reported when the window ends.
  void auth_failure(std::string_view event, std::string_view peer);
  void stop();

 private:
  void write_line(const std::string& line);
  void flush();
  void start_window();

  boost::asio::io_context& io_;
  std::FILE* file_;
  std::string unwritten_;  // this turn's lines; a flush is posted when the first arrives
  bool owns_file_;
  const std::chrono::milliseconds auth_window_;
  boost::asio::steady_timer window_timer_;
  int written_in_window_ = 0;
  int suppressed_in_window_ = 0;
};

}  // namespace sb::supervisor
