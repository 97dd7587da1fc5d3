// The status board: one shared-memory record per worker, written only by that worker and
// read by the supervisor with no round trip. Two alternating slots, each with a sequence
// counter, make reads consistent without a lock that a crashed or stopped writer could
// hold, and without ever waiting for a writer preempted half-way through an update.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <string_view>
#include "ipc/offers.hpp"

namespace sb::ipc {

enum class ComputerState : std::uint32_t {
  kIdle = 0,         // no computer attached
  kHandshaking = 1,  // socket installed, MCP initialize not answered yet
  kReady = 2,        // calls are forwarded
};

// What a worker publishes about its computer. Plain data, copied whole.
struct ComputerStatus {
  ComputerState state = ComputerState::kIdle;
  std::int32_t worker_pid = 0;
  std::uint32_t in_flight = 0;
  std::uint32_t max_in_flight = 0;
  std::int64_t attached_at_ms = 0;  // wall clock, Unix epoch milliseconds
  std::uint64_t generation = 0;     // the attached session's, as the supervisor handed it over
  std::uint32_t offers = 0;         // offer:: bits
  // Messages from its computers that no caller could take, since the worker started.
  std::uint64_t messages_dropped = 0;
  std::string peer;
  std::string server_json = "null";  // the computer's serverInfo as JSON text
};

struct BoardRecord;

// The worker's end: maps the segment the supervisor created.
class StatusWriter {
 public:
  explicit StatusWriter(const std::string& segment_name);
  ~StatusWriter();
  void publish(const ComputerStatus& status);
  // Proof of life, stamped every second from the worker's event loop.
  void heartbeat();

 private:
  struct Mapping;
  std::unique_ptr<Mapping> mapping_;
  BoardRecord* record_;
};

// The supervisor's end: creates the segment before spawning the worker. The worker is the
// less trusted side: a read never waits on it. A record it keeps torn reads as the last
// complete one, and how long it has been torn is there for the stall watch.
class StatusReader {
 public:
  explicit StatusReader(std::string segment_name);
  ~StatusReader();
  const std::string& segment_name() const { return name_; }
  // Removes the name; the mappings stay valid for both processes.
  void unlink();
  ComputerStatus read() const;
  // Milliseconds since the worker's last heartbeat (large when it never beat).
  std::int64_t heartbeat_age_ms() const;
  // Milliseconds since reads began to find the record torn (0 while they find it whole).
  std::int64_t torn_for_ms() const;
  // How many reads found the record torn and answered with the last complete one.
  std::uint64_t torn_reads() const { return torn_reads_; }

 private:
  struct Mapping;
  std::string name_;
  std::unique_ptr<Mapping> mapping_;
  BoardRecord* record_;
  // A read is a query, but it remembers what it last saw whole; one thread reads.
  mutable ComputerStatus last_whole_;
  mutable std::int64_t torn_since_ms_ = 0;
  mutable std::uint64_t torn_reads_ = 0;
};

std::int64_t monotonic_ms();

}  // namespace sb::ipc
