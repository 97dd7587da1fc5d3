// What `switchboard workers` prints: the JSON the control socket answers with, the table
// made from it, and for `--watch` the calls/s and p50 between two answers.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "supervisor/metrics/metrics.hpp"
#include "supervisor/workers/registry.hpp"

namespace sb::supervisor {

// The JSON of `switchboard workers --json`: the registry's rows, each with its computer's
// tool calls so far and their duration histogram (counts per bucket of kDurationBounds).
std::string workers_json(const std::vector<WorkerRow>& rows, const Metrics& metrics);

// The table of `switchboard workers`. With `earlier` (the answer `seconds` before), two
// more columns: calls/s and the p50 of the calls that ended in between.
std::string workers_table(const std::string& json_text);
std::string workers_table(const std::string& json_text, const std::string& earlier, double seconds);

}  // namespace sb::supervisor
