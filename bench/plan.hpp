// How much a run measures: the default, --full (the numbers in docs/benchmarks.md) and
// --smoke (CI: a few hundred calls, results checked, not timings).
#pragma once

#include <chrono>
#include <vector>

namespace sbbench {

using namespace std::chrono_literals;

enum class Mode { kSmoke, kDefault, kFull };

struct Plan {
  Mode mode = Mode::kDefault;
  // The main instance exports a span of every request to a collector the bench serves
  // (--tracing; docs/observability.md).
  bool tracing = false;
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
  // Switching in place: with each count of computers, `switches` switches, of which the
  // first `switches_under_load` with a caller per computer looping calls, each over a run
  // of `switch_window`.
  std::vector<int> switch_computers{10};
  int switches = 5;
  int switches_under_load = 5;
  std::chrono::milliseconds switch_window = 1500ms;
  // Twins: computers attached to both boxes, a caller each; each stage (before the kill,
  // after it, after the box is back) lasts `twins_window`.
  int twins_computers = 10;
  std::chrono::milliseconds twins_window = 2s;
  // Fan-out: `fanout_notifications` list changes to `fanout_streams` open streams, and
  // `fanout_calls` small calls to another computer before it as the yardstick.
  int fanout_streams = 100;
  int fanout_notifications = 1000;
  int fanout_calls = 2000;
};

Plan plan_for(Mode mode);

}  // namespace sbbench
