// 8. Switching in place: computers attached and a caller per computer looping calls while
// the switchboard switches itself (SIGUSR2) again and again (docs/architecture.md,
// "Switching").
#include <algorithm>
#include <atomic>
#include <optional>
#include <sstream>
#include <thread>

#include "bench/attach.hpp"
#include "bench/bench_run.hpp"
#include "bench/report.hpp"
#include "harness/http_client.hpp"

namespace sbbench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kSwitchTimeout = 120s;

// Connects to /healthz every few milliseconds, counting what was refused or unanswered:
// a listener that never refuses, during switches too.
class Prober {
 public:
  explicit Prober(int port)
      : thread_([this, port] {
          while (!stop_) {
            try {
              if (harness::http_get(port, "/healthz").status != 200) ++refused_;
            } catch (const std::exception&) {
              ++refused_;
            }
            ++probes_;
            std::this_thread::sleep_for(5ms);
          }
        }) {}
  ~Prober() { finish(); }
  void finish() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  long probes() const { return probes_; }
  long refused() const { return refused_; }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<long> probes_{0};
  std::atomic<long> refused_{0};
  std::thread thread_;
};

std::string ms_of(double ns) {
  return fixed(ns / 1e6, 1);
}

}  // namespace

void Bench::run_switch() {
  std::ostringstream table;
  table << "## 8. Switching in place\n\n"
        << "Computers attached and a keep-alive caller per computer looping small calls; the "
           "switchboard is sent SIGUSR2 again and again (docs/architecture.md, \"Switching\"). "
           "Each switch under load falls in a run of calls: a computer's pause is its "
           "caller's longest wait between two replies in that run (the switch's cost plus one "
           "call). The switch's own pause is the `service_restarted` line's `pause_ms`, from "
           "the switch's start to the last session taken up. A prober connects to /healthz "
           "every 5 ms throughout. Memory at rest before the first switch and after the "
           "last (kB: supervisor RSS, workers' mean PSS).\n\n"
        << row({"computers", "switches (under load)", "pause p50 ms", "pause max ms",
                "switch p50 ms", "switch max ms", "calls", "failed", "redialled",
                "refused / probes", "supervisor RSS", "worker PSS"})
        << separator(12);
  for (int computers : plan_.switch_computers) {
    guarded("switch", [&] { switch_under_load(computers, table); });
  }
  table << "\n";
  switch_table_ = table.str();
}

void Bench::switch_under_load(int computers, std::ostringstream& table) {
  progress("switching in place: " + std::to_string(computers) + " computers");
  BenchSwitchboard switchboard(computers, kReadyTimeout, program_);
  ComputerFleet fleet(fault_every_);
  attach_all(switchboard, fleet, computers);
  CallerPool pool;
  std::vector<std::string> names;
  for (const auto& computer : switchboard.computers()) names.push_back(computer.name);
  if (auto error = pool.connect_relay(switchboard.port(), switchboard.token(), names, computers))
    throw std::runtime_error(*error);
  std::this_thread::sleep_for(1s);
  const Memory before = memory_at_rest(switchboard, computers);

  // A thousand computers take their workers' start to be taken up: a longer run each, and
  // the first few switches under load only.
  const auto window = std::max<std::chrono::milliseconds>(plan_.switch_window, computers * 8ms);
  const int loaded =
      computers > 100 ? std::min(3, plan_.switches_under_load) : plan_.switches_under_load;
  std::vector<std::int64_t> pauses;
  std::vector<std::int64_t> switch_ms;
  long calls = 0, failed = 0, redialled = 0;
  Prober prober(switchboard.port());
  for (int i = 0; i < plan_.switches; ++i) {
    progress("switch " + std::to_string(i + 1) + "/" + std::to_string(plan_.switches));
    std::optional<Tally> tally;
    std::thread load;
    if (i < loaded) {
      load = std::thread(
          [&] { tally = pool.concurrent(Path::kRelay, CallSpec{}, computers, window, 1L << 40); });
      std::this_thread::sleep_for(window / 4);
    }
    const auto line = switchboard.switch_in_place(kSwitchTimeout);
    if (load.joinable()) load.join();
    if (tally) {
      pauses.insert(pauses.end(), tally->longest_gaps_ns.begin(), tally->longest_gaps_ns.end());
      calls += tally->ok + tally->failed;
      failed += tally->failed;
      failures_.add("switch under load", *tally);
    }
    if (line.is_null()) {
      failures_.add("switch", 1, "no service_restarted line: " + switchboard.log_tail());
      break;
    }
    switch_ms.push_back(line.value("pause_ms", std::int64_t{0}));
    redialled += line.value("redialled", 0L);
  }
  prober.finish();
  std::this_thread::sleep_for(1s);
  const Memory after = memory_at_rest(switchboard, computers);
  if (fleet.upgraded() != computers)
    failures_.add("switch", fleet.upgraded() - computers, "a computer dialled again");
  if (const int restarts = switchboard.worker_restarts(); restarts > 0)
    failures_.add("switch", restarts, "a worker restarted");
  failures_.add("switch", redialled, "a computer was not resumed");
  failures_.add("switch", prober.refused(), "a connection to /healthz was refused");

  std::sort(pauses.begin(), pauses.end());
  std::sort(switch_ms.begin(), switch_ms.end());
  const auto arrow = [](long from, long to) {
    return std::to_string(from) + " → " + std::to_string(to);
  };
  table << row({std::to_string(computers),
                std::to_string(switch_ms.size()) + " (" + std::to_string(loaded) + ")",
                ms_of(percentile(pauses, 50)), ms_of(percentile(pauses, 100)),
                fixed(percentile(switch_ms, 50), 0), fixed(percentile(switch_ms, 100), 0),
                std::to_string(calls), std::to_string(failed), std::to_string(redialled),
                std::to_string(prober.refused()) + " / " + std::to_string(prober.probes()),
                arrow(before.supervisor_rss, after.supervisor_rss),
                arrow(before.worker_pss_mean, after.worker_pss_mean)});
  verdicts_.add("no call fails across " + std::to_string(computers) + "-computer switches",
                std::to_string(failed) + " of " + std::to_string(calls), failed == 0);
  verdicts_.add("no computer redials across switches (" + std::to_string(computers) + ")",
                std::to_string(redialled), redialled == 0);
}

}  // namespace sbbench
