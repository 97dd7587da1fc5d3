// Processes for tests and benchmarks: temporary directories, free ports, starting a
// program with its output in files (nothing of ours leaking into it, and ended if we die),
// running one to completion, reaping with a deadline, and what /proc says about a pid.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace harness {

namespace fs = std::filesystem;

fs::path bin_dir();     // where switchboard and switchboard-worker were built
fs::path source_dir();  // the checkout they were built from

// A fresh directory under /tmp, removed on destruction (kept if SB_KEEP_TEMP is set).
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "sb-test");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// A port nobody listens on right now (bind 127.0.0.1:0, read it, close).
int free_port();

std::string read_file(const fs::path& path);

// Starts `argv` with stdin from /dev/null and stdout/stderr appended to the files given
// (nullopt: /dev/null). It gets SIGTERM when the thread that started it ends, so nothing
// outlives an interrupted run. Throws when it cannot start; the caller reaps it.
pid_t start_process(const std::vector<std::string>& argv, const std::optional<fs::path>& out,
                    const std::optional<fs::path>& err);

// waitpid with a deadline: the wait status, or nullopt if it is still running.
std::optional<int> reap_within(pid_t pid, std::chrono::milliseconds timeout);

// A wait status as a test compares it: the exit code, or minus the signal that ended it.
int exit_code_of(int wait_status);

// SIGTERM, then SIGKILL if it has not exited within `grace`; reaped either way.
void stop_process(pid_t pid, std::chrono::milliseconds grace);

struct CommandResult {
  int exit_code = -1;  // -1: did not exit normally in time
  std::string out;
  std::string err;
};

// Runs a program to completion (bounded) and captures its output (through files in
// `scratch_dir`, removed afterwards).
CommandResult run_command(const std::vector<std::string>& argv, const fs::path& scratch_dir,
                          std::chrono::milliseconds timeout = std::chrono::seconds(15));

// Whether a process exists and is not a zombie.
bool process_alive(pid_t pid);
// The state letter in /proc/<pid>/stat (R, S, T, Z, ...), or 0 when gone.
char process_state(pid_t pid);
pid_t parent_pid(pid_t pid);
// One field of /proc/<pid>/status as written after its colon ("" when absent).
std::string proc_status_field(pid_t pid, const std::string& field);
// A "Name:   123 kB" field of /proc/<pid>/status (VmRSS, VmHWM), in KiB; nothing when the
// process or the field is not there.
std::optional<long> status_kib(pid_t pid, const std::string& field);

// Sets an environment variable for the processes started from now on (the supervisor
// passes its environment to its workers), and restores it on destruction.
class ScopedEnv {
 public:
  ScopedEnv(std::string name, const std::string& value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> previous_;
};

// Shortened product timers for the supervisor and its workers (shared/timings.hpp), e.g.
// TestTimings("handshake=1500"): what takes a minute for real, tested in seconds.
class TestTimings : public ScopedEnv {
 public:
  explicit TestTimings(const std::string& timings)
      : ScopedEnv("SWITCHBOARD_TEST_TIMINGS", timings) {}
};

}  // namespace harness
