// 7. Progress (an event stream through the relay) and cancellation.
#include <algorithm>
#include <map>
#include <sstream>

#include "bench/bench_run.hpp"

namespace sbbench {

void Bench::stream(BenchSwitchboard& switchboard, ComputerFleet& fleet, CallerPool& pool) {
  connect(pool, switchboard, fleet, {switchboard.computers()[0].name}, 2);
  constexpr int kProgress = 3;
  const CallSpec with_progress{.progress = kProgress};
  const int rounds = plan_.latency_rounds;
  const std::vector<Path> paths{Path::kRelay, Path::kDirect};
  for (const Path path : paths) {
    failures_.add("progress warm-up (" + name_of(path) + ")",
                  pool.sequential(path, with_progress, plan_.latency_warmup));
  }
  std::map<Path, std::vector<std::int64_t>> calls, cancels;
  for (int round = 0; round < rounds; ++round) {
    progress("progress and cancellation round " + std::to_string(round + 1) + "/" +
             std::to_string(rounds));
    for (std::size_t k = 0; k < paths.size(); ++k) {
      const Path path = paths[(std::size_t(round) + k) % paths.size()];
      auto tally = pool.sequential(path, with_progress, std::max(1, plan_.stream_calls / rounds));
      failures_.add("progress (" + name_of(path) + ")", tally);
      calls[path].insert(calls[path].end(), tally.latencies_ns.begin(), tally.latencies_ns.end());
      tally = pool.cancels(path, fleet, std::max(1, plan_.cancel_samples / rounds));
      failures_.add("cancel (" + name_of(path) + ")", tally);
      cancels[path].insert(cancels[path].end(), tally.latencies_ns.begin(),
                           tally.latencies_ns.end());
    }
  }
  const auto relay_calls = latency_of(calls[Path::kRelay]);
  const auto direct_calls = latency_of(calls[Path::kDirect]);
  const auto relay_cancels = latency_of(cancels[Path::kRelay]);
  const auto direct_cancels = latency_of(cancels[Path::kDirect]);
  std::ostringstream out;
  out << "## 7. Progress and cancellation\n\n"
      << "In the same alternating blocks. A call with progress: the computer sends " << kProgress
      << " notifications/progress before its result; through the relay the reply "
         "becomes an event stream (every event checked: the caller's own token, then "
         "the result), directly the same messages arrive on the WebSocket; time to "
         "the result. A cancel: the computer holds a call, the caller sends "
         "notifications/cancelled (through the relay, a POST of its own, answered 202; "
         "the held call's request is answered -32800); time from the cancel's write "
         "to its arrival at the computer. Microseconds.\n\n"
      << latency_header() << latency_row("call with progress, relay", relay_calls)
      << latency_row("call with progress, direct", direct_calls)
      << ratio_row("relay / direct", relay_calls, direct_calls)
      << latency_row("cancel, relay", relay_cancels)
      << latency_row("cancel, direct", direct_cancels)
      << ratio_row("relay / direct", relay_cancels, direct_cancels) << "\n";
  stream_table_ = out.str();
}

}  // namespace sbbench
