// 2. Throughput with concurrent callers, and the CPU the relay spends per call.
#include <unistd.h>

#include <algorithm>
#include <map>
#include <sstream>

#include "bench/bench_run.hpp"
#include "bench/proc_stats.hpp"
#include "bench/report.hpp"

namespace sbbench {
namespace {

std::vector<std::string> names_of(const BenchSwitchboard& switchboard, int count) {
  std::vector<std::string> names;
  for (int i = 0; i < count; ++i) names.push_back(switchboard.computers()[std::size_t(i)].name);
  return names;
}

void accumulate(Tally& into, const Tally& block) {
  into.ok += block.ok;
  into.failed += block.failed;
  into.seconds += block.seconds;
  if (into.first_error.empty()) into.first_error = block.first_error;
}

double cpu_of(const std::vector<pid_t>& pids) {
  double total = 0;
  for (pid_t pid : pids) total += cpu_seconds(pid).value_or(0);
  return total;
}

}  // namespace

void Bench::throughput(BenchSwitchboard& switchboard, const BareRelay& bare, ComputerFleet& fleet,
                       CallerPool& pool, const std::vector<pid_t>& workers) {
  std::ostringstream table, floor_table;
  table << "## 2. Throughput: small tools/call, concurrent callers\n\n"
        << "Each caller has one keep-alive connection and one call in flight; "
        << (plan_.mode == Mode::kSmoke
                ? std::to_string(plan_.throughput_max_calls) + " calls per run"
                : fixed(double(plan_.throughput_duration.count()) / 1000.0, 1) +
                      " s per path, in " + std::to_string(plan_.throughput_blocks) +
                      " alternating blocks")
        << "; max_inflight 64 for the computers and the client. Direct: one WebSocket per "
           "caller to the same fake computer code. CPU: utime+stime from /proc per successful "
           "call; the bench's own CPU (callers and fake computers) is shown for each path, so "
           "the whole cost of a relayed call is bench + supervisor + workers.\n\n"
        << row({"computers", "callers", "relay calls/s", "direct calls/s", "relay / direct",
                "supervisor CPU s", "workers CPU s", "supervisor CPU µs/call",
                "workers CPU µs/call", "bench CPU µs/call (relay)", "bench CPU µs/call (direct)"})
        << separator(11);
  floor_table << "### The floor: the bare relay\n\n"
              << "In the same alternating blocks. " << kBareRelayText
              << " CPU: its front and backs together per successful call.\n\n"
              << row({"computers", "callers", "bare relay calls/s", "bare relay / direct",
                      "relay / bare relay", "bare relay CPU µs/call", "relay CPU / bare relay CPU",
                      "bench CPU µs/call (bare relay)"})
              << separator(8);
  const CallSpec small;
  const std::vector<Path> paths{Path::kRelay, Path::kDirect, Path::kBareRelay};
  const auto bare_pids = bare.pids();
  for (int computers : plan_.throughput_computers) {
    for (int callers : plan_.throughput_callers) {
      progress("throughput: " + std::to_string(callers) + " callers over " +
               std::to_string(computers) + " computers");
      const auto names = names_of(switchboard, computers);
      connect(pool, switchboard, fleet, names, callers);
      connect_bare(pool, bare, names, callers);
      const std::string label =
          std::to_string(callers) + " callers/" + std::to_string(computers) + " computers";
      if (plan_.throughput_warmup.count() > 0) {
        for (const Path path : paths) {
          failures_.add("throughput warm-up (" + name_of(path) + ") " + label,
                        pool.concurrent(path, small, callers, plan_.throughput_warmup,
                                        plan_.throughput_max_calls));
        }
      }
      // The paths take turns in blocks, so that a neighbour's load hits them alike.
      std::map<Path, Tally> tallies;
      std::map<Path, double> bench_cpu;
      double supervisor_cpu = 0, workers_cpu = 0, bare_cpu = 0;
      const auto block = plan_.throughput_duration / plan_.throughput_blocks;
      for (int b = 0; b < plan_.throughput_blocks; ++b) {
        for (std::size_t k = 0; k < paths.size(); ++k) {
          const Path path = paths[(std::size_t(b) + k) % paths.size()];
          const double bench_before = cpu_seconds(::getpid()).value_or(0);
          const double supervisor_before = cpu_seconds(switchboard.pid()).value_or(0);
          const double workers_before = cpu_of(workers);
          const double bare_before = cpu_of(bare_pids);
          accumulate(tallies[path],
                     pool.concurrent(path, small, callers, block, plan_.throughput_max_calls));
          bench_cpu[path] += cpu_seconds(::getpid()).value_or(0) - bench_before;
          if (path == Path::kRelay) {
            supervisor_cpu += cpu_seconds(switchboard.pid()).value_or(0) - supervisor_before;
            workers_cpu += cpu_of(workers) - workers_before;
          } else if (path == Path::kBareRelay) {
            bare_cpu += cpu_of(bare_pids) - bare_before;
          }
        }
      }
      for (const Path path : paths)
        failures_.add("throughput (" + name_of(path) + ") " + label, tallies[path]);
      auto rate = [&](Path path) {
        const Tally& tally = tallies[path];
        return tally.seconds > 0 ? double(tally.ok) / tally.seconds : 0.0;
      };
      auto per_call_us = [&](double seconds, Path path) {
        return seconds / std::max(1.0, double(tallies[path].ok)) * 1e6;
      };
      const double relay_rate = rate(Path::kRelay);
      const double direct_rate = rate(Path::kDirect);
      const double bare_rate = rate(Path::kBareRelay);
      const double relay_cpu = per_call_us(supervisor_cpu + workers_cpu, Path::kRelay);
      const double floor_cpu = per_call_us(bare_cpu, Path::kBareRelay);
      table << row({std::to_string(computers), std::to_string(callers), fixed(relay_rate, 0),
                    fixed(direct_rate, 0), ratio(relay_rate, direct_rate), fixed(supervisor_cpu, 2),
                    fixed(workers_cpu, 2), fixed(per_call_us(supervisor_cpu, Path::kRelay), 1),
                    fixed(per_call_us(workers_cpu, Path::kRelay), 1),
                    fixed(per_call_us(bench_cpu[Path::kRelay], Path::kRelay), 1),
                    fixed(per_call_us(bench_cpu[Path::kDirect], Path::kDirect), 1)});
      floor_table << row({std::to_string(computers), std::to_string(callers), fixed(bare_rate, 0),
                          ratio(bare_rate, direct_rate), ratio(relay_rate, bare_rate),
                          fixed(floor_cpu, 1), ratio(relay_cpu, floor_cpu),
                          fixed(per_call_us(bench_cpu[Path::kBareRelay], Path::kBareRelay), 1)});
      if (callers == 64) {
        const std::string where =
            std::to_string(computers) + (computers == 1 ? " computer" : " computers");
        auto share = [&](double rate) {
          return fixed(100.0 * rate / std::max(direct_rate, 1e-9), 0) + "%";
        };
        verdicts_.add("throughput at 64 callers, " + where + " ≥ 50% of direct", share(relay_rate),
                      relay_rate >= 0.5 * direct_rate, share(bare_rate));
        verdicts_.add("supervisor + workers CPU ≤ 28 µs per call at 64 callers, " + where,
                      fixed(relay_cpu, 1) + " µs", relay_cpu <= 28, fixed(floor_cpu, 1) + " µs");
      }
    }
  }
  std::cout << table.str() << "\n" << floor_table.str() << "\n";
}

}  // namespace sbbench
