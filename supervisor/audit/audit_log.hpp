// The audit log: JSON lines, one writer (this process), file mode 0600 at creation, or
// stdout when no audit_path is set. Workers report their sessions' events over IPC and
// the supervisor writes them, so lines never interleave. Lines are collected during one
// turn of the event loop and written together at its end, in one write: under load one
// write carries the lines of many calls. What a crash can lose is said in docs/protocol.md
// ("Audit log"). Also the caps that keep a flood of cheap requests from filling the disk:
// on auth-failure lines, and on the call lines of calls it did not relay.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "shared/log.hpp"
#include "shared/timings.hpp"

namespace sb::supervisor {

// The fields of a "call" line (docs/protocol.md, "Audit log").
// What a call line is about: a tool call, a resource read or a prompt got; each names its
// subject in a member of its own (`tool`, `uri`, `prompt`).
enum class CallKind { kTool, kResource, kPrompt };

struct CallRecord {
  std::string_view principal;
  // A caller signed in with an OAuth access token: its issuer and `sub` ("" otherwise).
  std::string_view oauth_issuer;
  std::string_view oauth_subject;
  // The span of the request, when it was traced (docs/observability.md): hex ids, "" else.
  std::string_view trace_id;
  std::string_view span_id;
  std::string_view computer;
  std::string_view tool;  // the tool's name, the resource's URI or the prompt's name
  CallKind kind = CallKind::kTool;
  std::string_view outcome;
  std::optional<std::int64_t> error_code;  // null when there is none
  std::int64_t ms = 0;
  std::size_t response_bytes = 0;
  const nlohmann::json& args;  // the arguments' text, "" or null (audit_args off)
  // Whether the computer had the call. One it did not (refused, or vm_status, which the
  // switchboard answers) costs a caller nothing to repeat: such lines are capped.
  bool relayed = true;
};

class AuditLog {
 public:
  // Throws std::runtime_error when the file cannot be opened.
  AuditLog(boost::asio::io_context& io, const std::optional<std::filesystem::path>& path,
           std::chrono::milliseconds window = Timings{}.audit_window);
  ~AuditLog();
  AuditLog(const AuditLog&) = delete;
  AuditLog& operator=(const AuditLog&) = delete;

  // Writes {"ts":..,"event":..,...fields}.
  void write(std::string_view event, nlohmann::json fields);
  // The one line every call writes, composed without a JSON tree: building and dumping an
  // object of ten members cost ~2 µs, a third of the supervisor's JSON per call
  // (docs/benchmarks-history.md). The same text as write("call", ...): keys in the same order.
  // A call that was not relayed is written only while its caller and computer are within
  // the cap for this window; the rest are counted, and summed up when the window ends.
  void write_call(const CallRecord& record);
  // Lines of unrelayed calls per caller and computer per window ([limits]
  // audit_unrelayed_per_minute); from the next call on.
  void set_unrelayed_cap(int lines_per_window) { unrelayed_cap_ = lines_per_window; }
  // Writes a line a worker composed; anything that is not one JSON object is refused.
  void write_from_worker(std::string_view line);
  // vm_auth_fail / client_auth_fail, at most 20 per window (60 s); the number suppressed
  // is reported when the window ends.
  void auth_failure(std::string_view event, std::string_view peer);
  // Every line written from now on is also handed to `sink`, with its event and, for a call
  // that was traced, its span's ids (docs/observability.md, "The audit as logs"); an empty
  // sink hands nothing.
  using LineSink = std::function<void(std::string_view event, const std::string& line,
                                      std::string_view trace_id, std::string_view span_id)>;
  void set_line_sink(LineSink sink) { sink_ = std::move(sink); }
  // Writes this turn's lines now rather than at the end of the turn: for an answer that
  // must not reach its reader before the line that records it.
  void flush();
  // Ends the window (its counts of suppressed lines written) and writes every line.
  void stop();

 private:
  void write_line(const std::string& line);
  void start_window();
  void end_window();

  // Lines of one caller's unrelayed calls to one computer in this window. Keys are names
  // from the config, so their number is bounded by it; the map is emptied every window.
  struct UnrelayedLines {
    int written = 0;
    int suppressed = 0;
  };
  using CallerAndComputer = std::pair<std::string, std::string>;

  boost::asio::io_context& io_;
  LineSink sink_;
  std::FILE* file_;
  std::string unwritten_;  // this turn's lines; a flush is posted when the first arrives
  bool owns_file_;
  const std::chrono::milliseconds window_;
  boost::asio::steady_timer window_timer_;
  int auth_written_ = 0;
  int auth_suppressed_ = 0;
  int unrelayed_cap_ = 20;
  std::map<CallerAndComputer, UnrelayedLines> unrelayed_;
  LogThrottle malformed_from_workers_;  // a worker is less trusted: it may send them at will
};

}  // namespace sb::supervisor
