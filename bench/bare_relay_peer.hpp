// The bare relay (bare_relay.cpp) beside the real one: the same layout with none of the
// relay's work, its computers dialled from the bench's fleet. What it costs, measured in
// the same blocks as the relay, is the floor a relay on this layout cannot go below.
#pragma once

#include <sys/types.h>

#include <vector>

#include "bench/fake_computer.hpp"
#include "harness/process.hpp"

namespace sbbench {

class BareRelay {
 public:
  // Starts switchboard-bare-relay and attaches `computers` fake computers of `fleet`;
  // returns once all are past their handshake. Throws with its stderr when it is not.
  BareRelay(int computers, ComputerFleet& fleet);
  ~BareRelay();
  BareRelay(const BareRelay&) = delete;
  BareRelay& operator=(const BareRelay&) = delete;

  int port() const { return port_; }  // callers POST /mcp/c<K> here
  // The front and its backs, for their CPU.
  std::vector<pid_t> pids() const;

 private:
  harness::TempDir dir_{"sb-bench-bare"};
  int port_ = harness::free_port();
  int computer_port_ = harness::free_port();
  pid_t pid_ = -1;
};

}  // namespace sbbench
