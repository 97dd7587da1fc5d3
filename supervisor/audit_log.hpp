// The audit log: JSON lines, one writer (this process), file mode 0600 at creation, or
// stdout when no audit_path is set. Workers report their sessions' events over IPC and
// the supervisor writes them, so lines never interleave. Also the rate cap on
// auth-failure lines (docs/protocol.md, "Audit log").
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "ipc/timings.hpp"

namespace sb::supervisor {

class AuditLog {
 public:
  // Throws std::runtime_error when the file cannot be opened.
  AuditLog(boost::asio::io_context& io, const std::optional<std::filesystem::path>& path,
           std::chrono::milliseconds auth_window = ipc::Timings{}.auth_window);
  ~AuditLog();
  AuditLog(const AuditLog&) = delete;
  AuditLog& operator=(const AuditLog&) = delete;

  // Writes {"ts":..,"event":..,...fields}.
  void write(std::string_view event, nlohmann::json fields);
  // Writes a line a worker composed; anything that is not one JSON object is refused.
  void write_from_worker(std::string_view line);
  // vm_auth_fail / client_auth_fail, at most 20 per window (60 s); the number suppressed
  // is reported when the window ends.
  void auth_failure(std::string_view event, std::string_view peer);
  void stop();

 private:
  void write_line(const std::string& line);
  void start_window();

  std::FILE* file_;
  bool owns_file_;
  const std::chrono::milliseconds auth_window_;
  boost::asio::steady_timer window_timer_;
  int written_in_window_ = 0;
  int suppressed_in_window_ = 0;
};

}  // namespace sb::supervisor
