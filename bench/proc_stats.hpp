// Readings from /proc: one process's CPU time and its PSS (its resident memory and peak:
// harness::status_kib), and what the machine is (CPUs, model, memory, load average) for
// the report.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

namespace sbbench {

// utime + stime of the whole process (every thread), in seconds; nothing when it is gone.
std::optional<double> cpu_seconds(pid_t pid);

// A field of /proc/<pid>/smaps_rollup (Rss, Pss, Private_Dirty...), in KiB.
std::optional<long> smaps_rollup_kib(pid_t pid, std::string_view field);

// Sets the process's peak (VmHWM) back to its current resident size (clear_refs 5). False
// when the kernel refuses; the peak is then the lifetime peak.
bool reset_peak(pid_t pid);

struct MachineInfo {
  int cpus = 0;
  std::string model;
  long memory_kib = 0;
};
MachineInfo machine_info();
std::string load_average();  // the three numbers of /proc/loadavg
double load_average_1m();

}  // namespace sbbench
