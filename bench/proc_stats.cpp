#include "bench/proc_stats.hpp"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

namespace sbbench {
namespace {

std::string proc_path(pid_t pid, const char* leaf) {
  return "/proc/" + std::to_string(pid) + "/" + leaf;
}

// The number after `field` on the line that starts with it ("VmHWM:    1234 kB").
std::optional<long> field_kib(const std::string& path, std::string_view field) {
  std::ifstream file(path);
  std::string line;
  while (std::getline(file, line)) {
    if (!line.starts_with(field)) continue;
    std::istringstream rest(line.substr(field.size()));
    long value = 0;
    if (rest >> value) return value;
  }
  return std::nullopt;
}

}  // namespace

std::optional<double> cpu_seconds(pid_t pid) {
  std::ifstream file(proc_path(pid, "stat"));
  std::string text;
  if (!std::getline(file, text)) return std::nullopt;
  // The command name may hold spaces and parentheses: the fields start after the last ')'.
  const auto close = text.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(text.substr(close + 2));
  std::vector<std::string> values;
  for (std::string value; fields >> value;) values.push_back(value);
  // Field 3 (state) is values[0]; utime is field 14, stime field 15.
  if (values.size() < 13) return std::nullopt;
  const double ticks = static_cast<double>(std::stoll(values[11]) + std::stoll(values[12]));
  return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

std::optional<long> smaps_rollup_kib(pid_t pid, std::string_view field) {
  return field_kib(proc_path(pid, "smaps_rollup"), std::string(field) + ":");
}

bool reset_peak(pid_t pid) {
  std::ofstream file(proc_path(pid, "clear_refs"));
  file << "5";
  file.flush();
  return file.good();
}

MachineInfo machine_info() {
  MachineInfo info;
  info.cpus = static_cast<int>(std::thread::hardware_concurrency());
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (!line.starts_with("model name")) continue;
    const auto colon = line.find(':');
    if (colon != std::string::npos) info.model = line.substr(colon + 2);
    break;
  }
  info.memory_kib = field_kib("/proc/meminfo", "MemTotal:").value_or(0);
  return info;
}

std::string load_average() {
  std::ifstream file("/proc/loadavg");
  std::string one, five, fifteen;
  file >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

double load_average_1m() {
  std::ifstream file("/proc/loadavg");
  double one = 0;
  file >> one;
  return one;
}

}  // namespace sbbench
