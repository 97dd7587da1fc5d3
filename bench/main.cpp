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
//      caller's notifications/cancelled to the computer receiving it.
// Phases 1–3 also measure the bare relay (bare_relay_peer.hpp), the relay's layout with
// none of its work, as the floor each target is missed against.
// Every call's reply is checked (id, nonce, image bytes); any failed call, failed setup or
// worker restart makes the exit status non-zero. No timing is ever asserted.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "bench/bare_relay_peer.hpp"
#include "bench/bench_switchboard.hpp"
#include "bench/callers.hpp"
#include "bench/fake_computer.hpp"
#include "bench/nginx_peer.hpp"
#include "bench/proc_stats.hpp"
#include "bench/process_hop.hpp"
#include "bench/report.hpp"

namespace sbbench {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
using json = nlohmann::json;

constexpr std::size_t kMiB = 1024 * 1024;
// About the size of a small tools/call request or reply on the wire.
constexpr std::size_t kSmallCallBytes = 256;
constexpr auto kReadyTimeout = 60s;

constexpr std::string_view kBareRelayText =
    "Bare relay: the same caller and request through the relay's layout with none of its work "
    "(bench/bare_relay.cpp): an HTTP front process passes each request's body over a Unix "
    "socket to a process per computer that writes it to the computer's WebSocket and passes "
    "the answer back, in order; no authentication, policy, JSON, ids, deadlines, audit or "
    "metrics. A correct relay does at least this much on this layout, so the bare relay is the "
    "floor each target is missed against.";

constexpr std::string_view kUsage =
    R"(switchboard-bench — what the relay costs, measured against a direct call

Usage: switchboard-bench [--smoke | --full] [--only PHASES] [--computers N] [--fault-every N]
                         [--program PATH]

  (default)        a short run, under a minute
  --full           longer runs and more samples (the numbers in docs/benchmarks.md)
  --smoke          a few hundred calls in seconds, for CI: checks results, not timings
  --only PHASES    comma-separated subset of: latency,throughput,large,stream,memory,storm
  --computers N    how many computers the storm (and its start-up and memory rows) has;
                   default 100 (10 with --smoke)
  --fault-every N  the fake computers answer every Nth call wrongly (the run must fail)
  --program PATH   the switchboard to measure, its switchboard-worker beside it (default:
                   this build's); for A/B runs against a copy of another build

Exit status: 0 when every call succeeded, 1 when a call or a setup step failed, 2 on a
usage error. SB_KEEP_TEMP=1 keeps the temporary directories (config, audit, log).
)";

enum class Mode { kSmoke, kDefault, kFull };

struct Plan {
  Mode mode = Mode::kDefault;
  int latency_warmup = 200;
  int latency_rounds = 4;
  int latency_calls_per_round = 1000;
  std::vector<int> throughput_computers{1, 4};
  std::vector<int> throughput_callers{1, 8, 64};
  std::chrono::milliseconds throughput_duration = 1500ms;
  std::chrono::milliseconds throughput_warmup = 200ms;
  int throughput_blocks = 2;  // per path, alternating
  long throughput_max_calls = 1L << 40;
  std::vector<int> large_mib{1, 4, 16};
  int large_repeats = 5;
  int stream_calls = 1000;   // calls with progress per path, over the latency rounds
  int cancel_samples = 200;  // cancels per path, likewise
  std::vector<int> rest_computers{1, 10};
  int storm_computers = 100;
  int storm_repeats = 1;
};

Plan plan_for(Mode mode) {
  Plan plan;
  plan.mode = mode;
  if (mode == Mode::kFull) {
    plan.latency_warmup = 1000;
    plan.latency_rounds = 10;
    plan.latency_calls_per_round = 5000;
    plan.throughput_duration = 5s;
    plan.throughput_blocks = 5;
    plan.throughput_warmup = 500ms;
    plan.large_repeats = 20;
    plan.storm_repeats = 3;
    plan.stream_calls = 10000;
    plan.cancel_samples = 1000;
  } else if (mode == Mode::kSmoke) {
    plan.latency_warmup = 10;
    plan.latency_rounds = 1;
    plan.latency_calls_per_round = 100;
    plan.throughput_callers = {8};
    plan.throughput_duration = 60s;  // bounded by the call count instead
    plan.throughput_warmup = 0ms;
    plan.throughput_max_calls = 100;
    plan.throughput_blocks = 1;
    plan.large_mib = {1};
    plan.large_repeats = 2;
    plan.rest_computers = {1};
    plan.storm_computers = 10;
    plan.stream_calls = 20;
    plan.cancel_samples = 10;
  }
  return plan;
}

// Failures seen anywhere in the run; any one makes the exit status 1.
struct Failures {
  long count = 0;
  std::vector<std::string> notes;
  void add(const std::string& where, long failed, const std::string& first_error) {
    if (failed <= 0) return;
    count += failed;
    notes.push_back(where + ": " + std::to_string(failed) + " failed (first: " + first_error + ")");
  }
  void add(const std::string& where, const Tally& tally) {
    add(where, tally.failed, tally.first_error);
  }
};

void progress(const std::string& line) {
  std::cerr << "… " << line << std::endl;
}

std::vector<std::string> names_of(const BenchSwitchboard& switchboard, int count) {
  std::vector<std::string> names;
  for (int i = 0; i < count; ++i) names.push_back(switchboard.computers()[std::size_t(i)].name);
  return names;
}

// How many computers GET /computers reports ready, or -1 when it does not answer.
int ready_count(HttpPoller& poller) {
  const auto answer = poller.get("/computers");
  if (!answer || answer->first != 200) return -1;
  const auto list = json::parse(answer->second, nullptr, false);
  if (!list.is_array()) return -1;
  int ready = 0;
  for (const auto& entry : list) ready += entry.is_object() && entry.value("ready", false);
  return ready;
}

bool wait_all_ready(const BenchSwitchboard& switchboard, int count, Clock::duration timeout) {
  HttpPoller poller(switchboard.port(), switchboard.token());
  const auto deadline = Clock::now() + timeout;
  while (ready_count(poller) < count) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

// Attaches `count` fake computers of `fleet` to `switchboard` and waits until all are ready.
void attach_all(BenchSwitchboard& switchboard, ComputerFleet& fleet, int count) {
  for (int i = 0; i < count; ++i)
    fleet.dial(switchboard.port(), switchboard.computers()[std::size_t(i)].secret);
  if (!fleet.wait_initialized(count, kReadyTimeout) ||
      !wait_all_ready(switchboard, count, kReadyTimeout)) {
    throw std::runtime_error("the fake computers did not all become ready (" +
                             std::to_string(fleet.initialized()) + "/" + std::to_string(count) +
                             " initialized, " + std::to_string(fleet.dial_failures()) +
                             " dials failed)\n--- switchboard log ---\n" + switchboard.log_tail());
  }
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

struct Latency {
  double p50 = 0, p99 = 0, p999 = 0, mean = 0, min = 0;
  std::size_t samples = 0;
};

Latency latency_of(std::vector<std::int64_t> ns) {
  std::sort(ns.begin(), ns.end());
  Latency out;
  out.samples = ns.size();
  if (ns.empty()) return out;
  out.p50 = percentile(ns, 50) / 1000.0;
  out.p99 = percentile(ns, 99) / 1000.0;
  out.p999 = percentile(ns, 99.9) / 1000.0;
  out.mean = mean(ns) / 1000.0;
  out.min = double(ns.front()) / 1000.0;
  return out;
}

// Tables of latencies: the header, then rows over its columns for one latency, the
// difference of two, their ratio.
std::string latency_header() {
  return row({"path", "p50", "p99", "p99.9", "mean", "min"}) + separator(6);
}

std::string latency_row(const std::string& name, const Latency& l) {
  return row({name, fixed(l.p50, 1), fixed(l.p99, 1), fixed(l.p999, 1), fixed(l.mean, 1),
              fixed(l.min, 1)});
}

std::string difference_row(const std::string& name, const Latency& a, const Latency& b) {
  return row({name, fixed(a.p50 - b.p50, 1), fixed(a.p99 - b.p99, 1), fixed(a.p999 - b.p999, 1),
              fixed(a.mean - b.mean, 1), fixed(a.min - b.min, 1)});
}

std::string ratio_row(const std::string& name, const Latency& a, const Latency& b) {
  return row({name, ratio(a.p50, b.p50), ratio(a.p99, b.p99), ratio(a.p999, b.p999),
              ratio(a.mean, b.mean), ratio(a.min, b.min)});
}

// Targets from the issue, filled in as the phases run, printed at the end; `floor`: what
// the bare relay measured for the same figure in the same run, when it has one.
struct Verdicts {
  std::vector<std::vector<std::string>> rows;
  void add(const std::string& target, const std::string& measured, bool met,
           const std::string& floor = "") {
    rows.push_back({target, measured, met ? "met" : "**missed**", floor});
  }
};

struct Memory {
  int computers = 0;
  long supervisor_rss = 0, supervisor_pss = 0;
  long worker_rss_mean = 0, worker_pss_mean = 0, worker_pss_max = 0, worker_uss_mean = 0;
};

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

// A storm of a thousand fake computers holds a socket each in this process.
void raise_descriptor_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= limit.rlim_max) return;
  limit.rlim_cur = limit.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &limit);
}

class Bench {
 public:
  Bench(Plan plan, std::set<std::string> phases, int fault_every, std::filesystem::path program)
      : plan_(std::move(plan)),
        phases_(std::move(phases)),
        fault_every_(fault_every),
        program_(std::move(program)) {}

  int run() {
    print_header();
    const bool main_instance =
        wants("latency") || wants("throughput") || wants("large") || wants("stream");
    if (main_instance) guarded("relay", [&] { run_main_instance(); });
    if (wants("memory")) {
      for (int computers : plan_.rest_computers)
        guarded("memory", [&] { run_memory_at_rest(computers); });
    }
    if (wants("storm")) guarded("storm", [&] { run_storm(); });
    if (!memory_.empty()) print_memory();
    std::cout << storm_table_ << stream_table_;
    print_footer();
    return failures_.count == 0 ? 0 : 1;
  }

 private:
  bool wants(const std::string& phase) const { return phases_.empty() || phases_.count(phase); }

  template <typename F>
  void guarded(const std::string& what, F f) {
    try {
      f();
    } catch (const std::exception& error) {
      failures_.add(what + " setup", 1, error.what());
      std::cerr << "error: " << what << ": " << error.what() << std::endl;
    }
  }

  void print_header() {
    const auto machine = machine_info();
    const char* mode = plan_.mode == Mode::kFull    ? "--full"
                       : plan_.mode == Mode::kSmoke ? "--smoke"
                                                    : "default";
    std::cout << "# switchboard-bench (" << mode << " run)\n\n"
              << "Machine: " << machine.cpus << " CPUs (" << machine.model << "), "
              << mib(double(machine.memory_kib)) << " MiB memory; load average at start "
              << load_average() << ".\nBuild: " << build_kind()
              << "; switchboard measured: " << program_.string() << ".\n\n";
  }

  static std::string build_kind() {
    std::string kind;
#if defined(__OPTIMIZE__)
    kind = "optimised";
#else
    kind = "unoptimised";
#endif
#if defined(__SANITIZE_ADDRESS__)
    kind += ", AddressSanitizer (timings meaningless)";
#endif
    return kind;
  }

  // ---- the main instance: 4 computers; latency, throughput, large results ----

  void run_main_instance() {
    int computers = 1;
    if (wants("throughput"))
      computers =
          *std::max_element(plan_.throughput_computers.begin(), plan_.throughput_computers.end());
    progress("starting switchboard with " + std::to_string(computers) + " computers");
    BenchSwitchboard switchboard(computers, kReadyTimeout, program_);
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
  void compare_with_metrics(const BenchSwitchboard& switchboard, const CallerPool& pool) {
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

  void latency(BenchSwitchboard& switchboard, const BareRelay& bare, ComputerFleet& fleet,
               CallerPool& pool) {
    connect(pool, switchboard, fleet, {switchboard.computers()[0].name}, 1);
    connect_bare(pool, bare, {switchboard.computers()[0].name}, 1);
    std::vector<Path> paths{Path::kRelay, Path::kDirect, Path::kBareRelay};
    const auto nginx = start_nginx(pool);
    if (nginx) paths.insert(paths.end(), {Path::kNginx, Path::kNginxProxy, Path::kNginxInnerProxy});
    const CallSpec small;
    for (const Path path : paths) {
      failures_.add("latency warm-up (" + name_of(path) + ")",
                    pool.sequential(path, small, plan_.latency_warmup));
    }
    std::map<Path, std::vector<std::int64_t>> samples;
    // The blocks' order rotates so that a neighbour's build slows every path alike.
    for (int round = 0; round < plan_.latency_rounds; ++round) {
      progress("latency round " + std::to_string(round + 1) + "/" +
               std::to_string(plan_.latency_rounds));
      for (std::size_t k = 0; k < paths.size(); ++k) {
        const Path path = paths[(std::size_t(round) + k) % paths.size()];
        auto tally = pool.sequential(path, small, plan_.latency_calls_per_round);
        failures_.add("latency (" + name_of(path) + ")", tally);
        auto& into = samples[path];
        into.insert(into.end(), tally.latencies_ns.begin(), tally.latencies_ns.end());
      }
    }
    const auto relay = latency_of(samples[Path::kRelay]);
    const auto direct = latency_of(samples[Path::kDirect]);
    const auto floor = latency_of(samples[Path::kBareRelay]);
    // What the relay is built from: a bare hop between two processes, same-sized message.
    const auto hop = latency_of(
        unix_round_trips(plan_.latency_rounds * plan_.latency_calls_per_round, kSmallCallBytes));
    std::cout << "## 1. Latency: small tools/call, one caller, sequential\n\n"
              << relay.samples << " calls per path, in " << plan_.latency_rounds
              << " alternating blocks; keep-alive HTTP/1.1 caller → supervisor → worker → "
                 "computer and back, against the same request over one WebSocket to the same "
                 "fake computer. Microseconds.\n\n"
              << latency_header() << latency_row("relay", relay) << latency_row("direct", direct)
              << ratio_row("relay / direct", relay, direct)
              << difference_row("relay − direct", relay, direct) << latency_row("bare relay", floor)
              << ratio_row("bare relay / direct", floor, direct)
              << ratio_row("relay / bare relay", relay, floor)
              << latency_row("bare process hop", hop) << "\n"
              << kBareRelayText << " Bare process hop: a " << kSmallCallBytes
              << "-byte message to a forked child over a Unix socket pair and back, blocking "
                 "reads, nothing else.\n\n";
    if (direct.samples && relay.samples && floor.samples) {
      verdicts_.add("latency p50 ≤ 2.3× direct", ratio(relay.p50, direct.p50),
                    relay.p50 <= 2.3 * direct.p50, ratio(floor.p50, direct.p50));
      verdicts_.add("latency p99 ≤ 2.5× direct", ratio(relay.p99, direct.p99),
                    relay.p99 <= 2.5 * direct.p99, ratio(floor.p99, direct.p99));
    }
    if (nginx) {
      print_nginx_hops(relay, direct, latency_of(samples[Path::kNginx]),
                       latency_of(samples[Path::kNginxProxy]),
                       latency_of(samples[Path::kNginxInnerProxy]));
    } else {
      std::cout << "nginx is not installed (Debian: nginx-light): its rows were skipped.\n\n";
    }
  }

  static std::string name_of(Path path) {
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
    }
    return "?";
  }

  // nginx as a yardstick (nginx_peer.hpp) when it is installed, its callers connected.
  static std::unique_ptr<NginxPeer> start_nginx(CallerPool& pool) {
    const auto program = NginxPeer::find();
    if (!program && std::getenv("SWITCHBOARD_REQUIRE_NGINX"))
      throw std::runtime_error("nginx is not installed and SWITCHBOARD_REQUIRE_NGINX is set");
    if (!program) return nullptr;
    // The shape and size of the relay's small reply.
    const std::string reply =
        R"({"jsonrpc":"2.0","id":1000,"result":{"content":[{"type":"text","text":"c0-1000"}],)"
        R"("isError":false}})";
    auto nginx = std::make_unique<NginxPeer>(*program, reply);
    for (const auto& [path, port] :
         {std::pair{Path::kNginx, nginx->direct_port()},
          std::pair{Path::kNginxProxy, nginx->proxy_port()},
          std::pair{Path::kNginxInnerProxy, nginx->inner_proxy_port()}}) {
      if (auto error = pool.connect_fixed(path, port, reply, 1))
        throw std::runtime_error(name_of(path) + " callers: " + *error);
    }
    return nginx;
  }

  void print_nginx_hops(const Latency& relay, const Latency& direct, const Latency& origin,
                        const Latency& proxied, const Latency& inner) {
    const double overhead = relay.p50 - direct.p50;
    const double hop = proxied.p50 - origin.p50;
    const double inner_hop = inner.p50 - origin.p50;
    auto in_hops = [&](double one) {
      return one > 0 ? fixed(overhead / one, 1) : std::string("-");
    };
    std::cout << "### nginx as a yardstick\n\n"
              << "The relay's caller and request, in the same rotating blocks, to an nginx "
                 "process that answers a fixed reply of the same size itself (the origin), "
                 "through another nginx process that reverse-proxies to it (keep-alive "
                 "upstream: a hop between two processes, as each of the relay's is), and "
                 "through a second server block of the origin's own process that does the "
                 "same (a hop that never leaves the process). Microseconds.\n\n"
              << latency_header() << latency_row("nginx answering", origin)
              << latency_row("nginx, proxy in another process", proxied)
              << latency_row("nginx, proxy in the same process", inner)
              << difference_row("one nginx hop between processes", proxied, origin)
              << difference_row("one nginx hop inside a process", inner, origin)
              << "\nThe relay's overhead (relay − direct, p50) is " << fixed(overhead, 1)
              << " µs: " << in_hops(hop) << " nginx hops between processes, " << in_hops(inner_hop)
              << " inside one (the relay adds two hops between processes by design: the "
                 "supervisor and the worker).\n\n";
    auto hop_verdict = [&](const std::string& where, double one) {
      verdicts_.add("relay overhead ≤ 3 nginx hops " + where + " (p50)",
                    fixed(overhead, 1) + " µs = " + in_hops(one) + " × " + fixed(one, 1) + " µs",
                    overhead <= 3 * one);
    };
    if (origin.samples && proxied.samples && inner.samples && hop > 0 && inner_hop > 0) {
      hop_verdict("between processes", hop);
      hop_verdict("inside a process", inner_hop);
    }
  }

  // ---- progress and cancellation ----

  void stream(BenchSwitchboard& switchboard, ComputerFleet& fleet, CallerPool& pool) {
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

  void connect(CallerPool& pool, BenchSwitchboard& switchboard, ComputerFleet& fleet,
               const std::vector<std::string>& computers, int callers) {
    if (auto error =
            pool.connect_relay(switchboard.port(), switchboard.token(), computers, callers))
      throw std::runtime_error("relay callers: " + *error);
    if (auto error = pool.connect_direct(fleet, callers))
      throw std::runtime_error("direct callers: " + *error);
  }

  static void connect_bare(CallerPool& pool, const BareRelay& bare,
                           const std::vector<std::string>& computers, int callers) {
    if (auto error = pool.connect_relay(bare.port(), "bare", computers, callers, Path::kBareRelay))
      throw std::runtime_error("bare relay callers: " + *error);
  }

  void throughput(BenchSwitchboard& switchboard, const BareRelay& bare, ComputerFleet& fleet,
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
                        "relay / bare relay", "bare relay CPU µs/call",
                        "relay CPU / bare relay CPU", "bench CPU µs/call (bare relay)"})
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
                      fixed(direct_rate, 0), ratio(relay_rate, direct_rate),
                      fixed(supervisor_cpu, 2), fixed(workers_cpu, 2),
                      fixed(per_call_us(supervisor_cpu, Path::kRelay), 1),
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
          verdicts_.add("throughput at 64 callers, " + where + " ≥ 50% of direct",
                        share(relay_rate), relay_rate >= 0.5 * direct_rate, share(bare_rate));
          verdicts_.add("supervisor + workers CPU ≤ 28 µs per call at 64 callers, " + where,
                        fixed(relay_cpu, 1) + " µs", relay_cpu <= 28, fixed(floor_cpu, 1) + " µs");
        }
      }
    }
    std::cout << table.str() << "\n" << floor_table.str() << "\n";
  }

  void large(BenchSwitchboard& switchboard, const BareRelay& bare, ComputerFleet& fleet,
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
      const long supervisor_before = status_kib(supervisor, "VmRSS").value_or(0);
      const long worker_before = status_kib(worker, "VmRSS").value_or(0);
      const double supervisor_cpu_before = cpu_seconds(supervisor).value_or(0);
      const double worker_cpu_before = cpu_seconds(worker).value_or(0);
      const auto relay = pool.sequential(Path::kRelay, spec, plan_.large_repeats);
      const double calls = std::max(1.0, double(relay.ok));
      const double supervisor_cpu_ms =
          (cpu_seconds(supervisor).value_or(0) - supervisor_cpu_before) / calls * 1000;
      const double worker_cpu_ms =
          (cpu_seconds(worker).value_or(0) - worker_cpu_before) / calls * 1000;
      const long supervisor_peak = status_kib(supervisor, "VmHWM").value_or(0);
      const long worker_peak = status_kib(worker, "VmHWM").value_or(0);
      const long supervisor_after = status_kib(supervisor, "VmRSS").value_or(0);
      const long worker_after = status_kib(worker, "VmRSS").value_or(0);
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

  // ---- memory at rest ----

  void run_memory_at_rest(int computers) {
    progress("memory at rest: " + std::to_string(computers) + " computers");
    BenchSwitchboard switchboard(computers, kReadyTimeout, program_);
    ComputerFleet fleet(fault_every_);
    attach_all(switchboard, fleet, computers);
    std::this_thread::sleep_for(1s);  // idle: a heartbeat or so, nothing else
    memory_.push_back(memory_at_rest(switchboard, computers));
  }

  void print_memory() {
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

  // ---- the attach storm ----

  void run_storm() {
    const int count = plan_.storm_computers;
    std::ostringstream table;
    table << "## 5. Attach storm: " << count << " computers dial at once\n\n"
          << "Workers all started first; then every fake computer dials at the same instant. "
             "Milliseconds from the first dial until: every upgrade answered (101), every "
             "computer initialized (it received notifications/initialized), and GET /computers "
             "(wildcard client, polled every 2 ms) shows all ready.\n\n"
          << row({"run", "all upgraded", "all initialized", "/computers all ready"})
          << separator(4);
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
      startup << row({std::to_string(repeat + 1), fixed(listening_ms, 1), fixed(up_ms, 1),
                      fixed(table_ms, 1)});
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
      verdicts_.add("`switchboard workers` ≤ 100 ms" + n,
                    fixed(worst_table, 0) + " ms (slowest run)", worst_table <= 100);
    }
    if (worst > 0) {
      verdicts_.add(std::to_string(count) + " computers ready within 1.5 s",
                    fixed(worst, 0) + " ms (slowest run)", worst <= 1500);
    }
  }

  void print_footer() {
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

  Plan plan_;
  std::set<std::string> phases_;
  int fault_every_;
  std::filesystem::path program_;
  Failures failures_;
  Verdicts verdicts_;
  std::vector<Memory> memory_;
  std::string metrics_line_;
  std::string storm_table_;   // printed after the memory table, whose last row it measures
  std::string stream_table_;  // section 7, measured with the main instance
};

}  // namespace
}  // namespace sbbench

int main(int argc, char** argv) {
  using namespace sbbench;
  Mode mode = Mode::kDefault;
  std::set<std::string> phases;
  int fault_every = 0;
  int computers = 0;
  std::filesystem::path program = harness::bin_dir() / "switchboard";
  const std::set<std::string> known{"latency", "throughput", "large", "stream", "memory", "storm"};
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
    } else if (arg == "--program" && i + 1 < argc) {
      program = argv[++i];
      if (!std::filesystem::is_regular_file(program))
        return usage_error("--program: no such file `" + program.string() + "`");
    } else {
      return usage_error("unexpected argument `" + arg + "`");
    }
  }
  std::signal(SIGPIPE, SIG_IGN);
  raise_descriptor_limit();
  auto plan = plan_for(mode);
  if (computers > 0) plan.storm_computers = computers;
  return Bench(std::move(plan), std::move(phases), fault_every, std::move(program)).run();
}
