// What the HTTP server works with: the config as of now (a reload swaps it), where a
// request goes (routes/) and what lets a computer's attach in, the reply budget that
// event streams draw on, and the metrics it counts refusals in.
#pragma once

#include <chrono>
#include <memory>

#include "supervisor/bounds/reply_budget.hpp"
#include "supervisor/config/config.hpp"
#include "supervisor/http/attach_hand_over.hpp"
#include "supervisor/http/types.hpp"
#include "supervisor/metrics/metrics.hpp"

namespace sb::supervisor {

struct HttpServices {
  const std::shared_ptr<const config::Config>& config;
  ReplyBudget& replies;
  Metrics& metrics;
  RouteRequest route;
  ComputerDoor computer_door;
  // A request must arrive whole within this of its first byte (shared/timings.hpp).
  std::chrono::milliseconds request_timeout{30'000};
  // A refused client's further bytes are dropped this long at most (shared/timings.hpp).
  std::chrono::milliseconds lingering_time{30'000};
};

}  // namespace sb::supervisor
