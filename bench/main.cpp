// switchboard-bench: what the relay costs, measured against a direct call.
//
// Starts the real `switchboard serve` (found beside this program) with fake computers
// that the bench dials itself, and measures, each against the same work done straight
// over a WebSocket to the same fake computer code:
//   1. latency of a small tools/call, sequential, keep-alive HTTP/1.1 (p50, p99, p99.9);
//   2. throughput with 1, 8 and 64 concurrent callers over 1 and 4 computers, and the CPU
//      the supervisor and the workers spend per call;
//   3. 1, 4 and 16 MiB results (base64 image content): time, and peak memory growth of
//      the supervisor and the worker;
//   4. memory at rest (RSS, PSS) with 1, 10 and 100 computers attached and idle;
//   5. an attach storm: 100 computers (--computers N) dial at once; time until /computers
//      shows all ready;
//   6. the storm's start-up: until the switchboard listens, until every worker is up, and
//      how long `switchboard workers` takes to list them all;
//   7. a call with progress (an event stream through the relay), and the time from a
//      caller's notifications/cancelled to the computer receiving it;
//   8. switching in place under load;
//   9. twins behind HAProxy (--only twins, or --full): one box killed and started again
//      while callers loop calls through the front;
//  10. a fan-out: a computer's list changes to many open event streams, and another
//      computer's small calls meanwhile.
// Phases 1–3 also measure the bare relay (bare_relay_peer.hpp), the relay's layout with
// none of its work, as the floor each target is missed against.
// Every call's reply is checked (id, nonce, image bytes); any failed call, failed setup or
// worker restart makes the exit status non-zero. No timing is ever asserted.
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>

#include "bench/bench_run.hpp"
#include "bench/plan.hpp"
#include "harness/descriptor_limit.hpp"

namespace sbbench {
namespace {

constexpr std::string_view kUsage =
    R"(switchboard-bench — what the relay costs, measured against a direct call

Usage: switchboard-bench [--smoke | --full] [--only PHASES] [--computers N] [--fault-every N]
                         [--program PATH] [--tracing]

  (default)        a short run, under a minute
  --full           longer runs and more samples (the numbers in docs/benchmarks.md)
  --smoke          a few hundred calls in seconds, for CI: checks results, not timings
  --only PHASES    comma-separated subset of:
                   latency,throughput,large,stream,memory,storm,switch,twins,fanout
                   (twins runs only when named, or with --full: it needs haproxy)
  --computers N    how many computers the storm (and its start-up and memory rows) has;
                   default 100 (10 with --smoke)
  --fault-every N  the fake computers answer every Nth call wrongly (the run must fail)
  --program PATH   the switchboard to measure, its switchboard-worker beside it (default:
                   this build's); for A/B runs against a copy of another build
  --tracing        the main instance traces every request ([telemetry], every call
                   sampled) to a collector the bench serves

Exit status: 0 when every call succeeded, 1 when a call or a setup step failed, 2 on a
usage error. SB_KEEP_TEMP=1 keeps the temporary directories (config, audit, log).
)";

}  // namespace
}  // namespace sbbench

int main(int argc, char** argv) {
  using namespace sbbench;
  Mode mode = Mode::kDefault;
  std::set<std::string> phases;
  int fault_every = 0;
  int computers = 0;
  bool tracing = false;
  std::filesystem::path program = harness::bin_dir() / "switchboard";
  const std::set<std::string> known{"latency", "throughput", "large", "stream", "memory",
                                    "storm",   "switch",     "twins", "fanout"};
  auto usage_error = [](const std::string& why) {
    std::cerr << "error: " << why << "\n\n" << kUsage;
    return 2;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      return 0;
    } else if (arg == "--smoke") {
      mode = Mode::kSmoke;
    } else if (arg == "--full") {
      mode = Mode::kFull;
    } else if (arg == "--only" && i + 1 < argc) {
      std::stringstream list(argv[++i]);
      for (std::string phase; std::getline(list, phase, ',');) {
        if (!known.count(phase)) return usage_error("unknown phase `" + phase + "`");
        phases.insert(phase);
      }
    } else if (arg == "--computers" && i + 1 < argc) {
      computers = std::atoi(argv[++i]);
      if (computers <= 0) return usage_error("--computers needs a positive number");
    } else if (arg == "--fault-every" && i + 1 < argc) {
      fault_every = std::atoi(argv[++i]);
      if (fault_every <= 0) return usage_error("--fault-every needs a positive number");
    } else if (arg == "--tracing") {
      tracing = true;
    } else if (arg == "--program" && i + 1 < argc) {
      program = argv[++i];
      if (!std::filesystem::is_regular_file(program))
        return usage_error("--program: no such file `" + program.string() + "`");
    } else {
      return usage_error("unexpected argument `" + arg + "`");
    }
  }
  std::signal(SIGPIPE, SIG_IGN);
  // A storm of a thousand fake computers holds a socket each in this process.
  harness::raise_descriptor_limit();
  auto plan = plan_for(mode);
  if (computers > 0) plan.storm_computers = computers;
  plan.tracing = tracing;
  return Bench(std::move(plan), std::move(phases), fault_every, std::move(program)).run();
}
