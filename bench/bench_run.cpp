#include "bench/bench_run.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <stdexcept>
#include <variant>

#include "bench/attach.hpp"
#include "bench/proc_stats.hpp"
#include "bench/report.hpp"

namespace sbbench {

void progress(const std::string& line) {
  std::cerr << "… " << line << std::endl;
}

int Bench::run() {
  print_header();
  const bool main_instance =
      wants("latency") || wants("throughput") || wants("large") || wants("stream");
  if (main_instance) guarded("relay", [&] { run_main_instance(); });
  if (wants("memory")) {
    for (int computers : plan_.rest_computers)
      guarded("memory", [&] { run_memory_at_rest(computers); });
  }
  if (wants("storm")) guarded("storm", [&] { run_storm(); });
  if (wants("switch")) run_switch();
  // Twins need HAProxy and wait out the computers' redial: asked for by name, or a whole
  // --full run.
  if (phases_.count("twins") || (phases_.empty() && plan_.mode == Mode::kFull)) run_twins();
  if (wants("fanout")) guarded("fan-out", [&] { run_fanout(); });
  if (!memory_.empty()) print_memory();
  std::cout << storm_table_ << stream_table_ << switch_table_ << twins_table_ << fanout_table_;
  print_footer();
  return failures_.count == 0 ? 0 : 1;
}

void Bench::print_header() {
  const auto machine = machine_info();
  const char* mode = plan_.mode == Mode::kFull    ? "--full"
                     : plan_.mode == Mode::kSmoke ? "--smoke"
                                                  : "default";
  std::cout << "# switchboard-bench (" << mode << " run)\n\n"
            << "Machine: " << machine.cpus << " CPUs (" << machine.model << "), "
            << mib(double(machine.memory_kib)) << " MiB memory; load average at start "
            << load_average() << ".\nBuild: " << build_kind()
            << "; switchboard measured: " << program_.string()
            << (plan_.tracing ? ", tracing every request to a collector on loopback" : "")
            << ".\n\n";
}

std::string Bench::build_kind() {
  std::string kind;
#if defined(__OPTIMIZE__)
  kind = "optimised";
#else
  kind = "unoptimised";
#endif
#if defined(SWITCHBOARD_SANITIZED)
  kind += ", AddressSanitizer (timings meaningless)";
#endif
  return kind;
}

// ---- the main instance: 4 computers; latency, throughput, large results ----

void Bench::run_main_instance() {
  int computers = 1;
  if (wants("throughput"))
    computers =
        *std::max_element(plan_.throughput_computers.begin(), plan_.throughput_computers.end());
  progress("starting switchboard with " + std::to_string(computers) + " computers");
  const bool oauth = wants("latency") && BenchSwitchboard::takes_oauth(program_);
  BenchSwitchboard switchboard(computers, kReadyTimeout, program_, 0, oauth, plan_.tracing);
  ComputerFleet fleet(fault_every_);
  CallerPool pool;
  attach_all(switchboard, fleet, computers);
  const auto workers = switchboard.worker_pids();
  if (wants("latency") || wants("throughput") || wants("large")) {
    progress("starting the bare relay with " + std::to_string(computers) + " computers");
    const BareRelay bare(computers, fleet);
    if (wants("latency")) latency(switchboard, bare, fleet, pool);
    if (wants("throughput")) throughput(switchboard, bare, fleet, pool, workers);
    if (wants("large")) large(switchboard, bare, fleet, pool, workers);
  }
  if (wants("stream")) stream(switchboard, fleet, pool);
  const int restarts = switchboard.worker_restarts();
  if (restarts > 0) failures_.add("workers", restarts, "a worker restarted during the run");
  compare_with_metrics(switchboard, pool);
}

// The switchboard's own count of the run (docs/metrics.md) must be the bench's: every
// relayed call that came back right is one `ok` in switchboard_calls_total.
void Bench::compare_with_metrics(const BenchSwitchboard& switchboard, const CallerPool& pool) {
  const auto counted = switchboard.calls_counted("ok");
  if (const auto* error = std::get_if<std::string>(&counted)) {
    failures_.add("metrics", 1, *error);
    return;
  }
  const long metrics_ok = std::lround(std::get<double>(counted));
  metrics_line_ = "Metrics: /metrics counts " + std::to_string(metrics_ok) +
                  " tool calls ok; the bench made " + std::to_string(pool.relayed_ok()) +
                  " through the relay.\n\n";
  if (metrics_ok != pool.relayed_ok()) {
    failures_.add("metrics", 1,
                  "switchboard_calls_total{outcome=\"ok\"} is not the bench's count of calls");
  }
}

std::string Bench::name_of(Path path) {
  switch (path) {
    case Path::kRelay:
      return "relay";
    case Path::kDirect:
      return "direct";
    case Path::kBareRelay:
      return "bare relay";
    case Path::kNginx:
      return "nginx";
    case Path::kNginxProxy:
      return "nginx proxy";
    case Path::kNginxInnerProxy:
      return "nginx inner proxy";
    case Path::kRelay2026:
      return "relay, 2026-07-28 caller";
    case Path::kRelayJwt:
      return "relay, JWT access token";
  }
  return "?";
}

void Bench::connect(CallerPool& pool, BenchSwitchboard& switchboard, ComputerFleet& fleet,
                    const std::vector<std::string>& computers, int callers) {
  if (auto error = pool.connect_relay(switchboard.port(), switchboard.token(), computers, callers))
    throw std::runtime_error("relay callers: " + *error);
  if (auto error = pool.connect_direct(fleet, callers))
    throw std::runtime_error("direct callers: " + *error);
}

void Bench::connect_bare(CallerPool& pool, const BareRelay& bare,
                         const std::vector<std::string>& computers, int callers) {
  if (auto error = pool.connect_relay(bare.port(), "bare", computers, callers, Path::kBareRelay))
    throw std::runtime_error("bare relay callers: " + *error);
}

void Bench::print_footer() {
  if (!verdicts_.rows.empty() && plan_.mode != Mode::kSmoke) {
    std::cout << "## Targets\n\n"
              << row({"target", "measured", "verdict", "floor: the bare relay, same run"})
              << separator(4);
    for (const auto& verdict : verdicts_.rows) std::cout << row(verdict);
    std::cout << "\n";
  }
  std::cout << metrics_line_ << "Load average at end: " << load_average() << ".\n";
  if (failures_.count == 0) {
    std::cout << "\nOK: every call succeeded.\n";
    return;
  }
  std::cout << "\nFAIL: " << failures_.count << " calls or steps failed.\n";
  for (const auto& note : failures_.notes) std::cout << "  " << note << "\n";
}

}  // namespace sbbench
