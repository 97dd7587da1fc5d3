// /metrics in the Prometheus text exposition format, version 0.0.4 (docs/metrics.md): the
// supervisor's own counters, and each worker's figures as the registry read them from the
// status board and /proc, never by asking the worker.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "supervisor/metrics/metrics.hpp"
#include "supervisor/workers/registry.hpp"

namespace sb::supervisor {

struct ScrapeSources {
  const Metrics& metrics;
  std::vector<WorkerRow> workers;
  std::size_t connections_open = 0;
  std::uint64_t reply_buffer_bytes = 0;
  std::uint64_t reply_buffer_capacity = 0;
};

std::string exposition(const ScrapeSources& sources);

}  // namespace sb::supervisor
