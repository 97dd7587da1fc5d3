// 5. An attach storm: every fake computer dials at once; and 6. the storm's start-up.
#include <algorithm>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "bench/attach.hpp"
#include "bench/bench_run.hpp"
#include "bench/report.hpp"

namespace sbbench {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

void Bench::run_storm() {
  const int count = plan_.storm_computers;
  std::ostringstream table;
  table << "## 5. Attach storm: " << count << " computers dial at once\n\n"
        << "Workers all started first; then every fake computer dials at the same instant. "
           "Milliseconds from the first dial until: every upgrade answered (101), every "
           "computer initialized (it received notifications/initialized), and GET /computers "
           "(wildcard client, polled every 2 ms) shows all ready.\n\n"
        << row({"run", "all upgraded", "all initialized", "/computers all ready"}) << separator(4);
  std::ostringstream startup;
  startup << "## 6. Start-up with " << count << " computers\n\n"
          << "The storm's switchboards. Milliseconds from starting `switchboard serve` until "
             "/healthz answered and until READY=1 (every worker said hello); then, after the "
             "storm, `switchboard workers` (the table, every computer attached) timed from "
             "the CLI's start to its exit.\n\n"
          << row({"run", "listening", "all workers up", "`switchboard workers`"}) << separator(4);
  double worst = 0;
  double worst_listening = 0, worst_up = 0, worst_table = 0;
  for (int repeat = 0; repeat < plan_.storm_repeats; ++repeat) {
    progress("attach storm " + std::to_string(repeat + 1) + "/" +
             std::to_string(plan_.storm_repeats) + ": starting switchboard with " +
             std::to_string(count) + " computers");
    BenchSwitchboard switchboard(count, kReadyTimeout, program_);
    HttpPoller poller(switchboard.port(), switchboard.token());
    ComputerFleet fleet(fault_every_);
    if (ready_count(poller) != 0) throw std::runtime_error("/computers did not answer");
    const auto begin = Clock::now();
    for (const auto& computer : switchboard.computers())
      fleet.dial(switchboard.port(), computer.secret);
    std::optional<Clock::time_point> ready;
    while (!ready && Clock::now() - begin < kReadyTimeout) {
      if (ready_count(poller) == count)
        ready = Clock::now();
      else
        std::this_thread::sleep_for(2ms);
    }
    if (!ready) {
      failures_.add("storm", count - std::max(0, ready_count(poller)),
                    "computers not ready within 60 s");
      continue;
    }
    fleet.wait_initialized(count, 5s);
    auto ms = [&](Clock::time_point at) {
      return fixed(std::chrono::duration<double, std::milli>(at - begin).count(), 1);
    };
    const double ready_ms = std::chrono::duration<double, std::milli>(*ready - begin).count();
    worst = std::max(worst, ready_ms);
    table << row({std::to_string(repeat + 1), ms(fleet.last_upgraded()),
                  ms(fleet.last_initialized()), fixed(ready_ms, 1)});
    const bool last = repeat + 1 == plan_.storm_repeats;
    const bool measured = std::any_of(memory_.begin(), memory_.end(),
                                      [&](const Memory& m) { return m.computers == count; });
    if (last && wants("memory") && !measured) {
      std::this_thread::sleep_for(1s);
      memory_.push_back(memory_at_rest(switchboard, count));
    }
    const auto table_begin = Clock::now();
    const auto listed = switchboard.cli({"workers"});
    const double table_ms =
        std::chrono::duration<double, std::milli>(Clock::now() - table_begin).count();
    const auto lines = std::count(listed.out.begin(), listed.out.end(), '\n');
    if (listed.exit_code != 0 || lines != count + 1)
      failures_.add("storm", 1, "`switchboard workers` did not list every computer");
    const double listening_ms = double(switchboard.listening_after().count()) / 1000.0;
    const double up_ms = double(switchboard.all_up_after().count()) / 1000.0;
    worst_listening = std::max(worst_listening, listening_ms);
    worst_up = std::max(worst_up, up_ms);
    worst_table = std::max(worst_table, table_ms);
    startup << row(
        {std::to_string(repeat + 1), fixed(listening_ms, 1), fixed(up_ms, 1), fixed(table_ms, 1)});
    if (switchboard.worker_restarts() > 0)
      failures_.add("storm", switchboard.worker_restarts(), "a worker restarted");
  }
  storm_table_ = table.str() + "\n" + startup.str() + "\n";
  if (worst_up > 0) {
    const std::string n = " (" + std::to_string(count) + " computers)";
    verdicts_.add("listening ≤ 1 s" + n, fixed(worst_listening, 0) + " ms (slowest run)",
                  worst_listening <= 1000);
    verdicts_.add("every worker up ≤ 5 s" + n, fixed(worst_up, 0) + " ms (slowest run)",
                  worst_up <= 5000);
    verdicts_.add("`switchboard workers` ≤ 100 ms" + n, fixed(worst_table, 0) + " ms (slowest run)",
                  worst_table <= 100);
  }
  if (worst > 0) {
    verdicts_.add(std::to_string(count) + " computers ready within 1.5 s",
                  fixed(worst, 0) + " ms (slowest run)", worst <= 1500);
  }
}

}  // namespace sbbench
