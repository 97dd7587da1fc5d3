// The real `switchboard serve`, started for a measurement: a fresh temporary directory
// holds its config (N computers, one wildcard client, max_inflight 64 everywhere), audit
// file, control socket and log. Started with the bench as parent-death signal target, so
// nothing outlives an interrupted run; stopped with SIGTERM (then SIGKILL) and reaped.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace sbbench {

namespace fs = std::filesystem;

// Where switchboard-bench itself lives: switchboard and switchboard-worker sit beside it.
fs::path own_directory();

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

struct ComputerIdentity {
  std::string name;    // c0, c1, ...
  std::string secret;  // what the fake computer presents
};

class SwitchboardProcess {
 public:
  // Writes the config and starts `switchboard serve`; returns once it listens and every
  // worker has said hello. Throws with the log's tail when it does not come up.
  SwitchboardProcess(int computers, std::chrono::milliseconds start_timeout);
  ~SwitchboardProcess();
  SwitchboardProcess(const SwitchboardProcess&) = delete;
  SwitchboardProcess& operator=(const SwitchboardProcess&) = delete;

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  const std::vector<ComputerIdentity>& computers() const { return computers_; }
  const std::string& token() const { return token_; }  // the wildcard client's
  fs::path config_path() const { return dir_.path() / "switchboard.toml"; }

  // `switchboard workers --json -c FILE`: the "workers" rows, or nothing on failure.
  std::optional<nlohmann::json> workers() const;
  // Worker pids in config order (0 where a worker has none right now).
  std::vector<pid_t> worker_pids() const;
  // Restarts summed over every worker (a crashed worker is a failed run).
  int worker_restarts() const;
  // SIGTERM, wait for exit (bounded), SIGKILL if need be. Idempotent.
  void stop();
  std::string log_tail(std::size_t bytes = 2000) const;

 private:
  void start(std::chrono::milliseconds timeout);

  TempDir dir_;
  int port_ = 0;
  pid_t pid_ = -1;
  std::vector<ComputerIdentity> computers_;
  std::string token_;
  std::vector<pid_t> seen_workers_;
};

// Starts `argv` (ipc/spawn.hpp) with the bench as parent-death signal target (nothing
// outlives an interrupted run); -1 sends that stream to /dev/null.
pid_t spawn(const std::vector<std::string>& argv, int stdout_fd, int stderr_fd);

// Runs a program to completion and returns its stdout; nothing when it fails to start,
// exits non-zero or outlives `timeout`.
std::optional<std::string> run_capture(const std::vector<std::string>& argv,
                                       std::chrono::milliseconds timeout);

}  // namespace sbbench
