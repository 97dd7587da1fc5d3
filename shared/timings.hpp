// The product's timers that the end-to-end tests must see fire: a computer's handshake
// and liveness, a worker's heartbeat, the supervisor's stall watch and its window for
// auth-failure lines, switchboard-connect's pings, redials and grace. Their values are
// the product's; `SWITCHBOARD_TEST_TIMINGS` (an environment variable the tests set, never
// a config key) shortens them, so that what takes a minute for real is tested in seconds
// (docs/configuration.md, "Environment"). The supervisor reads it and passes the worker's
// share in kConfigure.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace sb {

struct Timings {
  // worker: a computer's initialize must be answered within this (else 4005)
  std::chrono::milliseconds handshake{15'000};
  // worker: one liveness tick; a computer silent for 3 ticks is closed with 1011
  std::chrono::milliseconds ping_interval{20'000};
  // worker: how often it stamps its heartbeat; supervisor: how often it looks
  std::chrono::milliseconds heartbeat{1'000};
  // supervisor: a heartbeat this old (or a record torn this long) reports the computer
  // not ready, and a torn record kills the worker
  std::chrono::milliseconds heartbeat_stale{3'000};
  // supervisor: a heartbeat this old kills the worker
  std::chrono::milliseconds stall_kill{30'000};
  // supervisor: a call whose worker never answers it ends this long after the worker's own
  // deadline would have (its backstop)
  std::chrono::milliseconds backstop_grace{2'000};
  // supervisor: the window of the audit log's line caps (docs/protocol.md, "Audit log")
  std::chrono::milliseconds audit_window{60'000};
  // supervisor: a request must arrive whole within this of its first byte (else 408)
  std::chrono::milliseconds request_read{30'000};
  // supervisor: a refused client's further bytes are read and dropped this long at most,
  // then its connection is reset
  std::chrono::milliseconds lingering{30'000};
  // supervisor: an OAuth issuer's keys are fetched again for a token naming an unknown key
  // at most this often (docs/auth.md, "Keys")
  std::chrono::milliseconds jwks_refetch{60'000};
  // switchboard-connect (docs/protocol.md, "Daemons"): a ping this often, the link dead
  // after this much silence, the first redial wait (doubling to 60 times it), the wait
  // after a 401, and a stopping MCP server's grace before SIGKILL
  std::chrono::milliseconds dial_ping{20'000};
  std::chrono::milliseconds dial_silence{60'000};
  std::chrono::milliseconds dial_backoff{1'000};
  std::chrono::milliseconds dial_unauthorized{300'000};
  std::chrono::milliseconds server_grace{5'000};
};

// Parses "name=milliseconds,..." over the product's values, for the names above
// (handshake, ping_interval, heartbeat, heartbeat_stale, stall_kill, backstop_grace,
// audit_window,
// request_read, lingering, jwks_refetch, dial_ping,
// dial_silence, dial_backoff, dial_unauthorized, server_grace). nullopt and `error` set when
// the text is not that.
std::optional<Timings> parse_timings(std::string_view text, std::string& error);

// SWITCHBOARD_TEST_TIMINGS when it is set (with a warning in the log), else the product's
// values. Throws std::runtime_error when it does not parse.
Timings timings_from_environment();

}  // namespace sb
