// Finished spans, or audit lines as log records, sent to the collector
// (docs/observability.md, "Export"): OTLP/HTTP JSON, POSTed by the supervisor's one
// outbound client to `endpoint`/v1/traces (or /v1/logs) in batches of at most
// kMaxBatchRecords, each batch after `batch_delay` (or at once when one is full). The queue
// holds at most `max_queue_spans`; a record past it is dropped. A batch the collector
// refuses for a while (429, 502, 503, 504, or no answer) is tried again after 1, 2 and 4
// seconds, or after as long as its Retry-After asks (at most kMaxRetryAfter), then dropped. Nothing
// here ever waits for a call, and no call waits for it: what is sent and what is dropped is only
// counted.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "supervisor/config/config.hpp"
#include "supervisor/outbound/http_client.hpp"
#include "supervisor/telemetry/span.hpp"

namespace sb::supervisor {

inline constexpr std::size_t kMaxBatchRecords = 512;
inline constexpr int kExportAttempts = 4;
inline constexpr std::chrono::seconds kMaxRetryAfter{60};

// The wait before export attempt `attempt` (from 1) of a batch the collector refused: its
// Retry-After when it gave one, kept within kMaxRetryAfter, else the next backoff step.
std::chrono::milliseconds export_retry_delay(int attempt,
                                             std::optional<std::chrono::seconds> retry_after);

// `outcome` is "exported" or "dropped".
using CountExports = std::function<void(std::string_view outcome, std::uint64_t records)>;
using ExportHeaders = std::vector<std::pair<std::string, std::string>>;

// Spans (Span) or log records (LogRecord).
template <typename Record>
class OtlpExporter : public std::enable_shared_from_this<OtlpExporter<Record>> {
 public:
  OtlpExporter(boost::asio::io_context& io, OutboundClient& client, config::Telemetry telemetry,
               TraceResource resource, ExportHeaders headers, CountExports count);

  // Starts sending; stop() drops what is queued (counted) and ends the sending.
  void start();
  void stop();
  // Written now (otlp_json.hpp), sent with its batch.
  void add(const Record& record);

 private:
  boost::asio::awaitable<void> run();
  boost::asio::awaitable<void> send(std::vector<std::string> batch);
  boost::asio::awaitable<void> pause(std::chrono::milliseconds how_long);

  boost::asio::io_context& io_;
  OutboundClient& client_;
  config::Telemetry telemetry_;
  TraceResource resource_;
  ExportHeaders headers_;
  CountExports count_;
  std::deque<std::string> queue_;  // each record written as it came (otlp_json.hpp)
  boost::asio::steady_timer wake_;
  // What run() is waiting for: a first record, a batch to fill, or a send to end.
  enum class State { kIdle, kBatching, kSending } state_ = State::kIdle;
  bool failing_ = false;  // the last batch was dropped: said once in the log
  bool stopped_ = false;
};

using SpanExporter = OtlpExporter<Span>;
using LogExporter = OtlpExporter<LogRecord>;

}  // namespace sb::supervisor
