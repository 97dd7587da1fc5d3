#include "bench/plan.hpp"

namespace sbbench {

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
    plan.switch_computers = {10, 1000};
    plan.switches = 20;
    plan.switches_under_load = 20;
    plan.fanout_streams = 1000;
    plan.fanout_notifications = 10000;
    plan.fanout_calls = 5000;
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
    plan.switch_computers = {4};
    plan.switches = 2;
    plan.switches_under_load = 2;
    plan.fanout_streams = 10;
    plan.fanout_notifications = 100;
    plan.fanout_calls = 50;
  }
  return plan;
}

}  // namespace sbbench
