// What the routes, northbound MCP, metrics and `switchboard workers` see of a computer and
// its worker (registry.hpp; views.cpp and Worker::view, Worker::row).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "ipc/status_board.hpp"

namespace sb::supervisor {

// What the routes need to know about one computer.
struct ComputerView {
  std::string name;
  ipc::ComputerStatus status;
  bool attached = false;  // a live socket holds the slot, possibly mid-handshake
  bool ready = false;     // handshake complete and the worker alive
};

// One row of `switchboard workers`.
struct WorkerRow {
  std::string computer;
  int pid = 0;
  std::string state;  // starting / idle / handshaking / ready / stalled / restarting
  std::int64_t attached_for_secs = -1;
  std::uint32_t in_flight = 0;
  std::uint32_t max_in_flight = 0;
  int restarts = 0;
  std::int64_t resident_kib = 0;
  bool sandboxed = false;        // no_new_privs and a seccomp filter, as /proc shows them
  std::uint64_t torn_reads = 0;  // status reads that found the record torn
  bool attached = false;         // a socket holds the slot, possibly mid-handshake
  std::uint64_t attaches = 0;
  std::map<std::string, std::uint64_t> detaches;  // by close code ("1000", ..., "other")
  std::uint64_t stalls = 0;
  std::uint64_t messages_dropped = 0;  // as the worker's status record says
  std::string build;                   // the build its process runs, as its hello said
  std::int64_t taken_up_at_ms = 0;     // when its session was taken up after a switch; 0: not
  std::uint64_t sessions_taken_up = 0;
};

}  // namespace sb::supervisor
