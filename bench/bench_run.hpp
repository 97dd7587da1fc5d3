// One run of switchboard-bench: the phases asked for, in order, each adding its table, its
// targets and its failures to the report. The phases are member functions of Bench, each
// in a file of its own.
#pragma once

#include <sys/types.h>

#include <exception>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bench/bare_relay_peer.hpp"
#include "bench/bench_switchboard.hpp"
#include "bench/callers.hpp"
#include "bench/fake_computer.hpp"
#include "bench/latency_table.hpp"
#include "bench/nginx_peer.hpp"
#include "bench/plan.hpp"

namespace sbbench {

inline constexpr std::string_view kBareRelayText =
    "Bare relay: the same caller and request through the relay's layout with none of its work "
    "(bench/bare_relay.cpp): an HTTP front process passes each request's body over a Unix "
    "socket to a process per computer that writes it to the computer's WebSocket and passes "
    "the answer back, in order; no authentication, policy, JSON, ids, deadlines, audit or "
    "metrics. A correct relay does at least this much on this layout, so the bare relay is the "
    "floor each target is missed against.";

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

// How far the run is, on stderr: the tables go to stdout.
void progress(const std::string& line);

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

// What the switchboard's processes hold now (memory_phase.cpp).
Memory memory_at_rest(const BenchSwitchboard& switchboard, int computers);

class Bench {
 public:
  Bench(Plan plan, std::set<std::string> phases, int fault_every, std::filesystem::path program)
      : plan_(std::move(plan)),
        phases_(std::move(phases)),
        fault_every_(fault_every),
        program_(std::move(program)) {}
  int run();

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

  // The report's frame, the main instance and its callers (bench_run.cpp).
  void print_header();
  static std::string build_kind();
  void print_footer();
  void run_main_instance();
  void compare_with_metrics(const BenchSwitchboard& switchboard, const CallerPool& pool);
  void connect(CallerPool& pool, BenchSwitchboard& switchboard, ComputerFleet& fleet,
               const std::vector<std::string>& computers, int callers);
  static void connect_bare(CallerPool& pool, const BareRelay& bare,
                           const std::vector<std::string>& computers, int callers);
  static std::string name_of(Path path);

  // 1. Latency, and nginx as its yardstick (latency_phase.cpp).
  void latency(BenchSwitchboard& switchboard, const BareRelay& bare, ComputerFleet& fleet,
               CallerPool& pool);
  static std::unique_ptr<NginxPeer> start_nginx(CallerPool& pool);
  void print_nginx_hops(const Latency& relay, const Latency& direct, const Latency& origin,
                        const Latency& proxied, const Latency& inner);
  // 2. Throughput (throughput_phase.cpp).
  void throughput(BenchSwitchboard& switchboard, const BareRelay& bare, ComputerFleet& fleet,
                  CallerPool& pool, const std::vector<pid_t>& workers);
  // 3. Large results (large_phase.cpp).
  void large(BenchSwitchboard& switchboard, const BareRelay& bare, ComputerFleet& fleet,
             CallerPool& pool, const std::vector<pid_t>& workers);
  // 4. Memory at rest (memory_phase.cpp).
  void run_memory_at_rest(int computers);
  void print_memory();
  // 5. and 6. The attach storm and its start-up (storm_phase.cpp).
  void run_storm();
  // 7. Progress and cancellation (stream_phase.cpp).
  void stream(BenchSwitchboard& switchboard, ComputerFleet& fleet, CallerPool& pool);
  // 8. Switching in place (switch_phase.cpp).
  void run_switch();
  void switch_under_load(int computers, std::ostringstream& table);
  // 9. Twins behind HAProxy: a lost box (twins_phase.cpp).
  void run_twins();
  void twins_kill_and_return(const std::filesystem::path& haproxy, std::ostringstream& table);
  // 10. Fan-out of list changes to many streams (fanout_phase.cpp).
  void run_fanout();

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
  std::string switch_table_;  // section 8
  std::string twins_table_;   // section 9
  std::string fanout_table_;  // section 10
};

}  // namespace sbbench
