// The cost of one hop between processes on this machine, measured bare: a message sent
// over a Unix socket pair to a forked child that echoes it back. The relay adds such hops
// (caller → supervisor → worker → computer), so this is the floor its latency sits on.
#pragma once

#include <cstdint>
#include <vector>

namespace sbbench {

// Nanoseconds per round trip of a `message_bytes` message, `count` times after a warm-up.
// Empty when the child could not be started.
std::vector<std::int64_t> unix_round_trips(int count, std::size_t message_bytes);

}  // namespace sbbench
