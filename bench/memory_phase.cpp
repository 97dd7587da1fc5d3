// 4. Memory at rest: computers attached and idle.
#include <algorithm>
#include <thread>

#include "bench/attach.hpp"
#include "bench/bench_run.hpp"
#include "bench/proc_stats.hpp"
#include "bench/report.hpp"

namespace sbbench {

Memory memory_at_rest(const BenchSwitchboard& switchboard, int computers) {
  Memory memory{.computers = computers};
  memory.supervisor_rss = smaps_rollup_kib(switchboard.pid(), "Rss").value_or(0);
  memory.supervisor_pss = smaps_rollup_kib(switchboard.pid(), "Pss").value_or(0);
  long rss = 0, pss = 0, uss = 0;
  const auto pids = switchboard.worker_pids();
  for (pid_t pid : pids) {
    rss += smaps_rollup_kib(pid, "Rss").value_or(0);
    const long worker_pss = smaps_rollup_kib(pid, "Pss").value_or(0);
    pss += worker_pss;
    uss += smaps_rollup_kib(pid, "Private_Clean").value_or(0) +
           smaps_rollup_kib(pid, "Private_Dirty").value_or(0);
    memory.worker_pss_max = std::max(memory.worker_pss_max, worker_pss);
  }
  const long count = std::max<long>(1, long(pids.size()));
  memory.worker_rss_mean = rss / count;
  memory.worker_pss_mean = pss / count;
  memory.worker_uss_mean = uss / count;
  return memory;
}

void Bench::run_memory_at_rest(int computers) {
  progress("memory at rest: " + std::to_string(computers) + " computers");
  BenchSwitchboard switchboard(computers, kReadyTimeout, program_);
  ComputerFleet fleet(fault_every_);
  attach_all(switchboard, fleet, computers);
  std::this_thread::sleep_for(1s);  // idle: a heartbeat or so, nothing else
  memory_.push_back(memory_at_rest(switchboard, computers));
}

void Bench::print_memory() {
  std::sort(memory_.begin(), memory_.end(),
            [](const Memory& a, const Memory& b) { return a.computers < b.computers; });
  std::cout << "## 4. Memory at rest: computers attached and idle\n\n"
            << "From /proc/<pid>/smaps_rollup, 1 s after the last computer was ready, on a "
               "fresh switchboard per row. Worker columns: mean over the workers (PSS max: "
               "the largest). USS = private clean + private dirty. MiB.\n\n"
            << row({"computers", "supervisor RSS", "supervisor PSS", "worker RSS", "worker PSS",
                    "worker PSS max", "worker USS"})
            << separator(7);
  for (const auto& memory : memory_) {
    std::cout << row({std::to_string(memory.computers), mib(double(memory.supervisor_rss)),
                      mib(double(memory.supervisor_pss)), mib(double(memory.worker_rss_mean)),
                      mib(double(memory.worker_pss_mean)), mib(double(memory.worker_pss_max)),
                      mib(double(memory.worker_uss_mean))});
  }
  std::cout << "\n";
  for (const auto& memory : memory_) {
    const std::string n = " (" + std::to_string(memory.computers) +
                          (memory.computers == 1 ? " computer)" : " computers)");
    verdicts_.add("idle worker ≤ 2 MiB PSS" + n, mib(double(memory.worker_pss_mean)) + " MiB",
                  memory.worker_pss_mean <= 2048);
    verdicts_.add("supervisor ≤ 48 MiB RSS" + n, mib(double(memory.supervisor_rss)) + " MiB",
                  memory.supervisor_rss <= 48 * 1024);
  }
}

}  // namespace sbbench
