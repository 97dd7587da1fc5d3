// Runs the real `switchboard serve` for an end-to-end test: writes its config into a fresh
// temporary directory (free port, audit file, control socket all inside it), starts it
// with posix_spawn, waits until /healthz answers, and on destruction stops and reaps it
// (and any worker left behind). Also: reload after rewriting the config, signals, the
// `switchboard` CLI (`workers`), and what the process wrote on stderr.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/audit_log.hpp"

namespace sbtest {

namespace fs = std::filesystem;

fs::path bin_dir();  // where switchboard and switchboard-worker were built

// A fresh directory under /tmp, removed on destruction (kept if SB_E2E_KEEP is set).
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

// A port nobody listens on right now (bind 127.0.0.1:0, read it, close).
int free_port();

// A secret as `switchboard gen-secret` makes one (64 hex chars) and its verifier.
struct Secret {
  std::string secret;
  std::string verifier;  // "sha256:<hex of SHA-256 over the secret's text>"
};
Secret new_secret();
std::string verifier_of(const std::string& secret);

// Builds the TOML of a config. listen, audit_path and control_socket are added by
// SwitchboardProcess; everything else comes from here.
class ConfigBuilder {
 public:
  ConfigBuilder();
  // A top-level key with its TOML value as written, e.g. set("max_inflight", "2").
  ConfigBuilder& set(std::string key, std::string toml_value);
  ConfigBuilder& timeouts(int default_secs, int control_secs, std::map<std::string, int> tools);
  // `[timeouts] max_total_secs`: how long a call may run, progress or not.
  ConfigBuilder& max_total_secs(int secs) { return timeout_setting("max_total_secs", secs); }
  // Any other `[timeouts]` key, e.g. timeout_setting("write_secs", 1).
  ConfigBuilder& timeout_setting(std::string key, int secs);
  // The top-level `allowed_origins = [...]`: browser origins besides loopback ones.
  ConfigBuilder& allowed_origins(const std::vector<std::string>& origins);
  ConfigBuilder& vm(const Secret& secret);  // the v1 form
  ConfigBuilder& computer(std::string name, const Secret& secret,
                          std::optional<int> max_inflight = {});
  // `computers_toml` is the inline table as written: R"({ "*" = ["*"] })".
  ConfigBuilder& client(std::string name, const Secret& token, std::string computers_toml,
                        std::optional<std::string> default_computer = {},
                        std::optional<int> max_inflight = {});
  // The v1 form: `tools = [...]`.
  ConfigBuilder& client_v1(std::string name, const Secret& token, std::vector<std::string> tools,
                           std::optional<int> max_inflight = {});
  // Any other table, appended verbatim after the clients (e.g. a [[pty_attach]] block).
  ConfigBuilder& block(std::string toml_table);
  std::string toml() const;

 private:
  std::vector<std::string> top_;
  int default_secs_ = 0;
  int control_secs_ = 0;
  std::map<std::string, int> tool_timeouts_;
  std::map<std::string, int> timeout_settings_;
  std::vector<std::string> computers_;
  std::vector<std::string> clients_;
  std::vector<std::string> blocks_;
};

struct CommandResult {
  int exit_code = -1;  // -1: did not exit normally in time
  std::string out;
  std::string err;
};

class SwitchboardProcess {
 public:
  // Writes the config and starts the supervisor; returns once /healthz answers.
  // `program`: another copy of `switchboard` (it runs the `switchboard-worker` beside it).
  explicit SwitchboardProcess(const ConfigBuilder& config,
                              fs::path program = bin_dir() / "switchboard");
  ~SwitchboardProcess();
  SwitchboardProcess(const SwitchboardProcess&) = delete;
  SwitchboardProcess& operator=(const SwitchboardProcess&) = delete;

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  const fs::path& dir() const { return dir_.path(); }
  fs::path config_path() const { return dir() / "switchboard.toml"; }
  fs::path audit_path() const { return dir() / "audit.jsonl"; }
  fs::path control_socket() const { return dir() / "control.sock"; }
  const AuditLog& audit() const { return audit_; }
  std::string stderr_text() const;

  // Rewrites the config file (same port, audit file and control socket).
  void write_config(const ConfigBuilder& config);
  // Rewrites the config, sends SIGHUP and waits for the config_reloaded audit line.
  void reload(const ConfigBuilder& config);
  void send_signal(int signal) const;
  // Waits (bounded) for the supervisor to exit: its exit status, or minus the number of the
  // signal that ended it; nullopt if it is still running.
  std::optional<int> wait_exit(std::chrono::milliseconds timeout);
  bool running() const { return pid_ > 0; }
  // Starts the supervisor again after it exited (same directory and config; a new port).
  void restart();

  // `switchboard <args...>` with this config's path appended as `-c FILE` when
  // `with_config` is set.
  CommandResult run_cli(std::vector<std::string> args, bool with_config = true) const;
  // `switchboard workers --json -c FILE`, parsed ("workers" array).
  nlohmann::json workers() const;
  // The worker row of one computer (throws if absent).
  nlohmann::json worker(const std::string& computer) const;

 private:
  void spawn();
  void write_file(const std::string& toml);
  void remember_workers(const nlohmann::json& rows) const;

  TempDir dir_;
  fs::path program_;
  int port_ = 0;
  pid_t pid_ = -1;
  std::string body_;
  AuditLog audit_;
  mutable std::vector<pid_t> seen_workers_;
};

// Sets an environment variable for the processes a test starts from now on (the
// supervisor passes its environment to its workers), and restores it on destruction.
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

// Shortened product timers for the supervisor and its workers (ipc/timings.hpp), e.g.
// TestTimings("handshake=1500"): what takes a minute for real, tested in seconds.
class TestTimings : public ScopedEnv {
 public:
  explicit TestTimings(const std::string& timings)
      : ScopedEnv("SWITCHBOARD_TEST_TIMINGS", timings) {}
};

// Runs a program to completion (bounded) and captures its output.
CommandResult run_command(const std::vector<std::string>& argv, const fs::path& scratch_dir,
                          std::chrono::milliseconds timeout = std::chrono::seconds(15));

// Whether a process exists and is not a zombie.
bool process_alive(pid_t pid);
// The state letter in /proc/<pid>/stat (R, S, T, Z, ...), or 0 when gone.
char process_state(pid_t pid);
pid_t parent_pid(pid_t pid);

}  // namespace sbtest
