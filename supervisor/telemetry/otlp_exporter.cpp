#include "supervisor/telemetry/otlp_exporter.hpp"

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "shared/log.hpp"
#include "supervisor/telemetry/otlp_json.hpp"

namespace sb::supervisor {
namespace {

namespace net = boost::asio;

constexpr std::size_t kMaxAnswerBytes = 64 * 1024;

// A refusal the OTLP specification says may pass: the collector is busy or restarting.
bool worth_trying_again(int status) {
  return status == 429 || status == 502 || status == 503 || status == 504;
}

// Which signal each kind of record is, and where it goes.
template <typename Record>
constexpr OtlpSignal kSignal =
    std::is_same_v<Record, Span> ? OtlpSignal::kTraces : OtlpSignal::kLogs;
template <typename Record>
constexpr const char* kPath = kSignal<Record> == OtlpSignal::kTraces ? "/v1/traces" : "/v1/logs";

}  // namespace

std::chrono::milliseconds export_retry_delay(int attempt,
                                             std::optional<std::chrono::seconds> retry_after) {
  if (retry_after) return std::min(*retry_after, kMaxRetryAfter);
  return std::chrono::seconds(1 << std::clamp(attempt - 1, 0, kExportAttempts));
}

template <typename Record>
OtlpExporter<Record>::OtlpExporter(net::io_context& io, OutboundClient& client,
                                   config::Telemetry telemetry, TraceResource resource,
                                   ExportHeaders headers, CountExports count)
    : io_(io),
      client_(client),
      telemetry_(std::move(telemetry)),
      resource_(std::move(resource)),
      headers_(std::move(headers)),
      count_(std::move(count)),
      wake_(io) {}

template <typename Record>
void OtlpExporter<Record>::start() {
  net::co_spawn(
      io_, [self = this->shared_from_this()]() { return self->run(); }, net::detached);
}

template <typename Record>
void OtlpExporter<Record>::stop() {
  stopped_ = true;
  if (!queue_.empty()) count_("dropped", queue_.size());
  queue_.clear();
  wake_.cancel();
}

template <typename Record>
void OtlpExporter<Record>::add(const Record& record) {
  if (stopped_) return;
  if (queue_.size() >= static_cast<std::size_t>(telemetry_.max_queue_spans)) {
    count_("dropped", 1);
    return;
  }
  queue_.push_back(otlp_json(record));
  if (state_ == State::kIdle || (state_ == State::kBatching && queue_.size() >= kMaxBatchRecords))
    wake_.cancel();
}

template <typename Record>
net::awaitable<void> OtlpExporter<Record>::run() {
  while (!stopped_) {
    if (queue_.empty()) {
      state_ = State::kIdle;
      co_await pause(std::chrono::hours(24));  // until the first record (add() wakes it)
      continue;
    }
    if (queue_.size() < kMaxBatchRecords) {
      state_ = State::kBatching;
      co_await pause(telemetry_.batch_delay);
      if (stopped_) break;
    }
    state_ = State::kSending;
    const std::size_t taken = std::min(queue_.size(), kMaxBatchRecords);
    std::vector<std::string> batch(
        std::make_move_iterator(queue_.begin()),
        std::make_move_iterator(queue_.begin() + static_cast<long>(taken)));
    queue_.erase(queue_.begin(), queue_.begin() + static_cast<long>(taken));
    co_await send(std::move(batch));
  }
}

template <typename Record>
net::awaitable<void> OtlpExporter<Record>::send(std::vector<std::string> batch) {
  OutboundRequest request{.method = "POST",
                          .url = telemetry_.endpoint + std::string(kPath<Record>),
                          .headers = headers_,
                          .body = otlp_request(kSignal<Record>, batch, resource_),
                          .max_response_bytes = kMaxAnswerBytes};
  request.headers.emplace_back("Content-Type", "application/json");
  std::string failure;
  std::optional<std::chrono::seconds> retry_after;
  for (int attempt = 0; attempt < kExportAttempts && !stopped_; ++attempt) {
    if (attempt > 0) co_await pause(export_retry_delay(attempt, retry_after));
    if (stopped_) break;
    const auto answer = co_await client_.send(request);
    retry_after.reset();
    if (const auto* response = std::get_if<OutboundResponse>(&answer)) {
      retry_after = response->retry_after;
      if (response->status >= 200 && response->status < 300) {
        if (failing_) {
          log_info("OTLP export works again",
                   {{"endpoint", telemetry_.endpoint}, {"path", kPath<Record>}});
        }
        failing_ = false;
        count_("exported", batch.size());
        co_return;
      }
      failure = "status " + std::to_string(response->status);
      if (!worth_trying_again(response->status)) break;
    } else {
      failure = std::get<std::string>(answer);
    }
  }
  if (!failing_ && !stopped_) {
    log_warn("OTLP export failed; records are dropped until the collector answers",
             {{"endpoint", telemetry_.endpoint}, {"path", kPath<Record>}, {"error", failure}});
  }
  failing_ = !stopped_;
  count_("dropped", batch.size());
}

template <typename Record>
net::awaitable<void> OtlpExporter<Record>::pause(std::chrono::milliseconds how_long) {
  wake_.expires_after(how_long);
  boost::system::error_code ignored;
  co_await wake_.async_wait(net::redirect_error(net::use_awaitable, ignored));
}

template class OtlpExporter<Span>;
template class OtlpExporter<LogRecord>;

}  // namespace sb::supervisor
