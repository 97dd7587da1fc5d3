#include "supervisor/audit/audit_log.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "shared/log.hpp"

namespace sb::supervisor {
namespace {

constexpr int kAuthFailuresPerWindow = 20;

std::string_view kind_word(CallKind kind) {
  switch (kind) {
    case CallKind::kResource:
      return "resource";
    case CallKind::kPrompt:
      return "prompt";
    case CallKind::kTool:
      break;
  }
  return "tool";
}

std::FILE* open_audit_file(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    throw std::runtime_error("opening the audit log " + path.string() + ": " +
                             std::strerror(errno));
  }
  std::FILE* file = ::fdopen(fd, "a");
  if (!file) {
    ::close(fd);
    throw std::runtime_error("opening the audit log " + path.string() + ": " +
                             std::strerror(errno));
  }
  return file;
}

}  // namespace

AuditLog::AuditLog(boost::asio::io_context& io, const std::optional<std::filesystem::path>& path,
                   std::chrono::milliseconds window)
    : io_(io),
      file_(path ? open_audit_file(*path) : stdout),
      owns_file_(path.has_value()),
      window_(window),
      window_timer_(io) {
  start_window();
}

AuditLog::~AuditLog() {
  flush();  // a clean stop loses nothing
  if (owns_file_) std::fclose(file_);
}

// What the caps held back so far is written now: the next process (a switch in place) or
// none (a stop) starts a window of its own, and would not know of it.
void AuditLog::stop() {
  window_timer_.cancel();
  end_window();
  flush();
}

void AuditLog::write(std::string_view event, nlohmann::json fields) {
  fields["ts"] = utc_timestamp_now();
  fields["event"] = event;
  const std::string line = fields.dump();
  write_line(line);
  if (sink_) sink_(event, line, "", "");
}

namespace {

// `"key":` and the value's JSON text, with the comma that follows every member but the last.
void append_member(std::string& line, std::string_view key, std::string_view json_text) {
  line += '"';
  line += key;
  line += "\":";
  line += json_text;
  line += ',';
}

// `"key":` and `text` as a JSON string. Names, outcomes and times are plain printable ASCII
// as a rule, which JSON quotes as it is; any other text takes nlohmann's escaping.
void append_string_member(std::string& line, std::string_view key, std::string_view text) {
  const bool plain = std::all_of(text.begin(), text.end(), [](unsigned char c) {
    return c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
  });
  if (!plain) return append_member(line, key, nlohmann::json(text).dump());
  line += '"';
  line += key;
  line += "\":\"";
  line += text;
  line += "\",";
}

}  // namespace

// Members in the order nlohmann::json's sorted objects give every other line.
void AuditLog::write_call(const CallRecord& record) {
  if (!record.relayed) {
    UnrelayedLines& lines = unrelayed_[CallerAndComputer(record.principal, record.computer)];
    if (lines.written >= unrelayed_cap_) {
      ++lines.suppressed;
      return;
    }
    ++lines.written;
  }
  std::string line = "{";
  line.reserve(256);
  append_member(line, "args", record.args.dump());
  append_string_member(line, "computer", record.computer);
  append_member(line, "error_code",
                record.error_code ? std::to_string(*record.error_code) : std::string("null"));
  append_member(line, "event", "\"call\"");
  if (!record.oauth_issuer.empty()) append_string_member(line, "issuer", record.oauth_issuer);
  append_string_member(line, "kind", kind_word(record.kind));
  append_member(line, "ms", std::to_string(record.ms));
  append_string_member(line, "outcome", record.outcome);
  append_string_member(line, "principal", record.principal);
  if (record.kind == CallKind::kPrompt) append_string_member(line, "prompt", record.tool);
  append_member(line, "response_bytes", std::to_string(record.response_bytes));
  if (!record.span_id.empty()) append_string_member(line, "span_id", record.span_id);
  if (!record.oauth_issuer.empty()) append_string_member(line, "subject", record.oauth_subject);
  if (record.kind == CallKind::kTool) append_string_member(line, "tool", record.tool);
  if (!record.trace_id.empty()) append_string_member(line, "trace_id", record.trace_id);
  append_string_member(line, "ts", utc_timestamp_now());
  if (record.kind == CallKind::kResource) append_string_member(line, "uri", record.tool);
  line.back() = '}';
  write_line(line);
  if (sink_) sink_("call", line, record.trace_id, record.span_id);
}

void AuditLog::write_from_worker(std::string_view line) {
  const auto parsed = nlohmann::json::parse(line, nullptr, false);
  if (!parsed.is_object() || !parsed.contains("event")) {
    if (const auto count = malformed_from_workers_.due()) {
      log_warn("dropped a malformed audit line from a worker", {{"count", std::to_string(*count)}});
    }
    return;
  }
  const std::string written = parsed.dump();
  write_line(written);
  if (sink_) {
    const auto event = parsed["event"];
    sink_(event.is_string() ? event.get_ref<const std::string&>() : std::string(), written, "", "");
  }
}

void AuditLog::write_line(const std::string& line) {
  // The io_context outlives this log and never runs again once it is gone, so the posted
  // flush cannot find it destroyed.
  if (unwritten_.empty()) boost::asio::post(io_, [this] { flush(); });
  unwritten_ += line;
  unwritten_ += '\n';
}

void AuditLog::flush() {
  if (unwritten_.empty()) return;
  // Write errors are ignored: the relay keeps working when the disk is full.
  std::fwrite(unwritten_.data(), 1, unwritten_.size(), file_);
  std::fflush(file_);
  unwritten_.clear();
}

void AuditLog::auth_failure(std::string_view event, std::string_view peer) {
  if (auth_written_ >= kAuthFailuresPerWindow) {
    ++auth_suppressed_;
    return;
  }
  ++auth_written_;
  write(event, {{"peer", peer}});
}

void AuditLog::start_window() {
  window_timer_.expires_after(window_);
  window_timer_.async_wait([this](const boost::system::error_code& error) {
    if (error) return;
    end_window();
    start_window();
  });
}

// What each cap held back in the window, one line per cause, then a fresh window.
void AuditLog::end_window() {
  const auto window_secs = std::chrono::duration_cast<std::chrono::seconds>(window_).count();
  if (auth_suppressed_ > 0)
    write("auth_failures_suppressed", {{"count", auth_suppressed_}, {"window_secs", window_secs}});
  for (const auto& [key, lines] : unrelayed_) {
    if (lines.suppressed == 0) continue;
    write("unrelayed_calls_suppressed", {{"principal", key.first},
                                         {"computer", key.second},
                                         {"count", lines.suppressed},
                                         {"window_secs", window_secs}});
  }
  auth_written_ = 0;
  auth_suppressed_ = 0;
  unrelayed_.clear();
}

}  // namespace sb::supervisor
