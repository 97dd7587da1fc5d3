// Finished spans sent to the collector (docs/observability.md, "Export"): OTLP/HTTP JSON,
// POSTed by the supervisor's one outbound client to `endpoint`/v1/traces in batches of at
// most kMaxBatchSpans, each batch after `batch_delay` (or at once when one is full). The
// queue holds at most `max_queue_spans`; a span past it is dropped. A batch the collector
// refuses for a while (429, 502, 503, 504, or no answer) is tried again after 1, 2 and
// 4 seconds, then dropped. Nothing here ever waits for a call, and no call waits for it:
// what is sent and what is dropped is only counted.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "supervisor/config/config.hpp"
#include "supervisor/outbound/http_client.hpp"
#include "supervisor/telemetry/span.hpp"

namespace sb::supervisor {

inline constexpr std::size_t kMaxBatchSpans = 512;
inline constexpr int kExportAttempts = 4;

// `outcome` is "exported" or "dropped".
using CountSpans = std::function<void(std::string_view outcome, std::uint64_t spans)>;
using ExportHeaders = std::vector<std::pair<std::string, std::string>>;

class SpanExporter : public std::enable_shared_from_this<SpanExporter> {
 public:
  SpanExporter(boost::asio::io_context& io, OutboundClient& client, config::Telemetry telemetry,
               TraceResource resource, ExportHeaders headers, CountSpans count);

  // Starts sending; stop() drops what is queued (counted) and ends the sending.
  void start();
  void stop();
  void add(Span span);

 private:
  boost::asio::awaitable<void> run();
  boost::asio::awaitable<void> send(std::vector<Span> batch);
  boost::asio::awaitable<void> pause(std::chrono::milliseconds how_long);

  boost::asio::io_context& io_;
  OutboundClient& client_;
  config::Telemetry telemetry_;
  TraceResource resource_;
  ExportHeaders headers_;
  CountSpans count_;
  std::deque<Span> queue_;
  boost::asio::steady_timer wake_;
  // What run() is waiting for: a first span, a batch to fill, or a send to end.
  enum class State { kIdle, kBatching, kSending } state_ = State::kIdle;
  bool failing_ = false;  // the last batch was dropped: said once in the log
  bool stopped_ = false;
};

}  // namespace sb::supervisor
