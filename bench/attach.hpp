// Attaching fake computers to a switchboard, and how the bench knows they are ready: GET
// /computers, as a caller sees them.
#pragma once

#include <chrono>

#include "bench/bench_switchboard.hpp"
#include "bench/callers.hpp"
#include "bench/fake_computer.hpp"

namespace sbbench {

inline constexpr auto kReadyTimeout = std::chrono::seconds(60);

// How many computers GET /computers reports ready, or -1 when it does not answer.
int ready_count(HttpPoller& poller);

// Attaches `count` fake computers of `fleet` to `switchboard` and waits until all are ready.
void attach_all(BenchSwitchboard& switchboard, ComputerFleet& fleet, int count);

}  // namespace sbbench
