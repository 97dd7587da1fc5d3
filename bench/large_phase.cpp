// 3. Large results: time, CPU and the memory a relayed reply costs the supervisor and the
// worker.
#include <algorithm>
#include <sstream>

#include "bench/bench_run.hpp"
#include "bench/proc_stats.hpp"
#include "bench/report.hpp"
#include "harness/process.hpp"

namespace sbbench {
namespace {

constexpr std::size_t kMiB = 1024 * 1024;

}  // namespace

void Bench::large(BenchSwitchboard& switchboard, const BareRelay& bare, ComputerFleet& fleet,
                  CallerPool& pool, const std::vector<pid_t>& workers) {
  connect(pool, switchboard, fleet, {switchboard.computers()[0].name}, 1);
  connect_bare(pool, bare, {switchboard.computers()[0].name}, 1);
  const pid_t supervisor = switchboard.pid();
  const pid_t worker = workers.empty() ? 0 : workers.front();
  std::ostringstream times, memory;
  times << "## 3. Large results: base64 image content, one call at a time\n\n"
        << plan_.large_repeats
        << " calls per size and path; median time. The image data is the size less 1 KiB, so "
           "the whole reply fits the 16 MiB frame limit. CPU: utime+stime per relayed call. "
           "The bare relay (§2) is the floor. Head: median time to the response head, which "
           "the relay sends as the reply starts to cross from its worker (a store-and-forward "
           "hop sends it once the reply is whole).\n\n"
        << row({"result", "relay ms", "direct ms", "relay / direct", "supervisor CPU ms/call",
                "worker CPU ms/call", "bare relay ms", "bare relay / direct", "relay head ms",
                "bare relay head ms"})
        << separator(10);
  memory << "Memory of the relayed calls above (one in flight). Before: VmRSS before them; "
            "peak: VmHWM after them (reset to VmRSS first via /proc/<pid>/clear_refs); growth: "
            "peak less before, also as a multiple of the payload; retained: VmRSS after less "
            "before. MiB.\n\n"
         << row({"result", "supervisor before", "supervisor peak", "supervisor growth",
                 "(× payload)", "supervisor retained", "worker before", "worker peak",
                 "worker growth", "(× payload)", "worker retained"})
         << separator(11);
  bool peaks_reset = true;
  for (int size_mib : plan_.large_mib) {
    const CallSpec spec{.result_bytes = std::size_t(size_mib) * kMiB - 1024};
    const std::string label = std::to_string(size_mib) + " MiB";
    progress("large results: " + label);
    image_data(spec.result_bytes);  // made before any clock starts
    failures_.add("large warm-up (relay)", pool.sequential(Path::kRelay, spec, 1));
    failures_.add("large warm-up (direct)", pool.sequential(Path::kDirect, spec, 1));
    failures_.add("large warm-up (bare relay)", pool.sequential(Path::kBareRelay, spec, 1));
    peaks_reset = reset_peak(supervisor) && reset_peak(worker) && peaks_reset;
    const long supervisor_before = harness::status_kib(supervisor, "VmRSS").value_or(0);
    const long worker_before = harness::status_kib(worker, "VmRSS").value_or(0);
    const double supervisor_cpu_before = cpu_seconds(supervisor).value_or(0);
    const double worker_cpu_before = cpu_seconds(worker).value_or(0);
    const auto relay = pool.sequential(Path::kRelay, spec, plan_.large_repeats);
    const double calls = std::max(1.0, double(relay.ok));
    const double supervisor_cpu_ms =
        (cpu_seconds(supervisor).value_or(0) - supervisor_cpu_before) / calls * 1000;
    const double worker_cpu_ms =
        (cpu_seconds(worker).value_or(0) - worker_cpu_before) / calls * 1000;
    const long supervisor_peak = harness::status_kib(supervisor, "VmHWM").value_or(0);
    const long worker_peak = harness::status_kib(worker, "VmHWM").value_or(0);
    const long supervisor_after = harness::status_kib(supervisor, "VmRSS").value_or(0);
    const long worker_after = harness::status_kib(worker, "VmRSS").value_or(0);
    const auto direct = pool.sequential(Path::kDirect, spec, plan_.large_repeats);
    const auto floor = pool.sequential(Path::kBareRelay, spec, plan_.large_repeats);
    failures_.add("large (relay) " + label, relay);
    failures_.add("large (direct) " + label, direct);
    failures_.add("large (bare relay) " + label, floor);
    const double relay_ms = latency_of(relay.latencies_ns).p50 / 1000.0;
    const double direct_ms = latency_of(direct.latencies_ns).p50 / 1000.0;
    const double floor_ms = latency_of(floor.latencies_ns).p50 / 1000.0;
    const double payload_kib = double(spec.result_bytes) / 1024.0;
    const double supervisor_growth = double(supervisor_peak - supervisor_before);
    const double worker_growth = double(worker_peak - worker_before);
    times << row({label, fixed(relay_ms, 2), fixed(direct_ms, 2), ratio(relay_ms, direct_ms),
                  fixed(supervisor_cpu_ms, 1), fixed(worker_cpu_ms, 1), fixed(floor_ms, 2),
                  ratio(floor_ms, direct_ms),
                  fixed(latency_of(relay.head_latencies_ns).p50 / 1000.0, 2),
                  fixed(latency_of(floor.head_latencies_ns).p50 / 1000.0, 2)});
    memory << row({label, mib(double(supervisor_before)), mib(double(supervisor_peak)),
                   mib(supervisor_growth), fixed(supervisor_growth / payload_kib, 2),
                   mib(double(supervisor_after - supervisor_before)), mib(double(worker_before)),
                   mib(double(worker_peak)), mib(worker_growth),
                   fixed(worker_growth / payload_kib, 2),
                   mib(double(worker_after - worker_before))});
    if (size_mib == 16) {
      verdicts_.add("16 MiB result ≤ 1.5× direct time", ratio(relay_ms, direct_ms),
                    relay_ms <= 1.5 * direct_ms, ratio(floor_ms, direct_ms));
      verdicts_.add("16 MiB: supervisor peak growth ≤ ~2× payload",
                    fixed(supervisor_growth / payload_kib, 2) + "×",
                    supervisor_growth <= 2.2 * payload_kib);
      verdicts_.add("16 MiB: worker peak growth ≤ ~2× payload",
                    fixed(worker_growth / payload_kib, 2) + "×",
                    worker_growth <= 2.2 * payload_kib);
    }
  }
  if (!peaks_reset) memory << "\n(The kernel refused clear_refs: peaks are lifetime peaks.)\n";
  std::cout << times.str() << "\n" << memory.str() << "\n";
}

}  // namespace sbbench
