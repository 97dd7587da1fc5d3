// 10. Fan-out: a computer's list changes sent to many open event streams while another
// computer's caller makes small calls (docs/benchmarks.md, "Fan-out"). The supervisor
// delivers a fan-out a few streams per event-loop turn, so the other computer's calls go on
// between them; how much they slow is what this measures.
#include <atomic>
#include <optional>
#include <sstream>
#include <thread>

#include "bench/attach.hpp"
#include "bench/bench_run.hpp"
#include "bench/report.hpp"
#include "bench/stream_readers.hpp"

namespace sbbench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kFanOutTimeout = 300s;
constexpr int kCallsPerCheck = 10;
constexpr std::string_view kListChanged = "notifications/tools/list_changed";

std::string list_changes_call(int notifications) {
  return R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"bench",)"
         R"("arguments":{"nonce":"fan-out","list_changes":)" +
         std::to_string(notifications) + "}}}";
}

}  // namespace

void Bench::run_fanout() {
  const int streams = plan_.fanout_streams;
  const int notifications = plan_.fanout_notifications;
  progress("fan-out: " + std::to_string(notifications) + " list changes to " +
           std::to_string(streams) + " streams");
  BenchSwitchboard switchboard(2, kReadyTimeout, program_, streams);
  ComputerFleet fleet(fault_every_);
  CallerPool pool;
  attach_all(switchboard, fleet, 2);
  if (auto error = pool.connect_relay(switchboard.port(), switchboard.token(), {"c1"}, 1))
    throw std::runtime_error("relay caller: " + *error);
  failures_.add("fan-out warm-up", pool.sequential(Path::kRelay, {}, plan_.latency_warmup));
  const Tally quiet = pool.sequential(Path::kRelay, {}, plan_.fanout_calls);
  failures_.add("calls without a fan-out", quiet);

  StreamReaders readers(switchboard.port(), switchboard.token(), "c0", streams,
                        std::string(kListChanged));
  std::atomic<bool> answered{false};
  std::optional<std::pair<int, std::string>> answer;
  const auto begin = Clock::now();
  std::thread trigger([&] {
    HttpPoller poller(switchboard.port(), switchboard.token());
    answer = poller.post("/mcp/c0", list_changes_call(notifications));
    answered.store(true);
  });
  // The calls go on until every broadcast the supervisor took is delivered: the computer
  // sends its notifications before its answer, so once it is answered the dropped count is
  // final.
  Tally busy;
  std::optional<long> expected;
  double dropped = 0;
  for (;;) {
    Tally tally = pool.sequential(Path::kRelay, {}, kCallsPerCheck);
    busy.ok += tally.ok;
    busy.failed += tally.failed;
    if (busy.first_error.empty()) busy.first_error = tally.first_error;
    busy.latencies_ns.insert(busy.latencies_ns.end(), tally.latencies_ns.begin(),
                             tally.latencies_ns.end());
    if (answered.load() && !expected) {
      const auto counted =
          switchboard.metric_sum("switchboard_notifications_dropped_total", {{"computer", "c0"}});
      if (const auto* error = std::get_if<std::string>(&counted)) {
        failures_.add("fan-out metrics", 1, *error);
        break;
      }
      dropped = std::get<double>(counted);
      expected = (notifications - std::lround(dropped)) * long{streams};
    }
    if (expected && readers.counted() >= *expected) break;
    if (Clock::now() - begin > kFanOutTimeout) {
      failures_.add("fan-out", 1,
                    "not delivered within " + std::to_string(kFanOutTimeout.count()) + " s");
      break;
    }
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - begin).count();
  trigger.join();
  failures_.add("calls during the fan-out", busy);
  if (!answer || answer->first != 200 || answer->second.find("fan-out") == std::string::npos)
    failures_.add("fan-out call", 1, answer ? answer->second.substr(0, 200) : "no answer");
  if (readers.open() != streams)
    failures_.add("fan-out", streams - readers.open(), "a stream was ended by the switchboard");

  const auto without = latency_of(quiet.latencies_ns);
  const auto with = latency_of(busy.latencies_ns);
  std::ostringstream out;
  out << "## 10. Fan-out\n\n"
      << "A computer (c0) sends " << notifications << " notifications/tools/list_changed in a "
      << "burst; " << streams << " event streams (GET /mcp/c0, 2025-11-25, each an MCP "
      << "session of its own, read by one thread of the bench) are open for them. Meanwhile "
      << "one caller makes small calls to another computer (c1), one after another, until "
      << "every notification the supervisor took has reached every stream. Broadcasts "
      << "waiting beyond the supervisor's cap are dropped and counted "
      << "(switchboard_notifications_dropped_total). Microseconds.\n\n"
      << latency_header() << latency_row("c1 small call, no fan-out", without)
      << latency_row("c1 small call, during the fan-out", with)
      << ratio_row("during / without", with, without) << "\n"
      << "Notifications taken: " << (notifications - std::lround(dropped)) << " of "
      << notifications << " (" << std::lround(dropped) << " dropped); delivered "
      << readers.counted() << " times over " << streams << " streams in " << fixed(seconds, 1)
      << " s.\n\n";
  fanout_table_ = out.str();
  verdicts_.add("c1's p50 during a " + std::to_string(notifications) + " × " +
                    std::to_string(streams) + " fan-out ≤ 3× without",
                ratio(with.p50, without.p50), with.p50 <= 3 * without.p50);
  const int restarts = switchboard.worker_restarts();
  if (restarts > 0) failures_.add("workers", restarts, "a worker restarted during the fan-out");
}

}  // namespace sbbench
