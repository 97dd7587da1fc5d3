// Runs the real `switchboard serve` for a test or a benchmark: writes its config into a
// fresh temporary directory (free port, audit file, control socket all inside it), starts
// it, waits until /healthz answers, and on destruction stops and reaps it (and any worker
// left behind). Also: reload after rewriting the config, signals, the `switchboard` CLI
// (`workers`), and what the process wrote on stderr.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "harness/audit_log.hpp"
#include "harness/config_builder.hpp"
#include "harness/process.hpp"
#include "harness/service_manager.hpp"

namespace harness {

class SwitchboardProcess {
 public:
  // Writes the config and starts the supervisor; returns once /healthz answers.
  // `program`: another copy of `switchboard` (it runs the `switchboard-worker` beside it).
  explicit SwitchboardProcess(const ConfigBuilder& config,
                              fs::path program = bin_dir() / "switchboard",
                              std::chrono::milliseconds start_timeout = std::chrono::seconds(15));
  // The same, run as a service by a stand-in for systemd with a file descriptor store
  // (service_manager.hpp) rather than started directly.
  struct UnderServiceManager {};
  SwitchboardProcess(const ConfigBuilder& config, UnderServiceManager);
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
  // Its stderr and audit file, framed for a failure report.
  std::string diagnostics() const;

  // Rewrites the config file (same port, audit file and control socket).
  void write_config(const ConfigBuilder& config);
  // Rewrites the config, sends SIGHUP and waits for the config_reloaded audit line.
  void reload(const ConfigBuilder& config);
  void send_signal(int signal) const;
  // Waits (bounded) for the supervisor to exit: its exit status, or minus the number of the
  // signal that ended it; nullopt if it is still running.
  std::optional<int> wait_exit(std::chrono::milliseconds timeout);
  bool running() const { return pid_ > 0; }
  // Starts the supervisor again after it exited (same directory and config), on a new port
  // unless `same_port` (for dialers that know the old URL).
  void restart(bool same_port = false);
  // SIGTERM, reaped (SIGKILL after 8 s), then every worker it was seen with. Idempotent.
  void stop();

  // ---- under a service manager ----
  FakeServiceManager& service_manager() { return *manager_; }
  // `systemctl restart`, a crash (the signal to the supervisor) with Restart=on-failure:
  // each returns once the service started again answers /healthz.
  void service_restart();
  void service_crash(int signal, const std::function<void()>& meanwhile = {});

  // `switchboard <args...>` with this config's path appended as `-c FILE` when
  // `with_config` is set.
  CommandResult run_cli(std::vector<std::string> args, bool with_config = true) const;
  // `switchboard workers --json -c FILE`, parsed ("workers" array).
  nlohmann::json workers() const;
  // The worker row of one computer (throws if absent).
  nlohmann::json worker(const std::string& computer) const;

 private:
  void spawn(bool same_port = false);
  void wait_healthy();
  void write_file(const std::string& toml);
  void remember_workers(const nlohmann::json& rows) const;

  TempDir dir_{"sb-e2e"};
  fs::path program_;
  std::chrono::milliseconds start_timeout_;
  int port_ = 0;
  pid_t pid_ = -1;
  std::string body_;
  AuditLog audit_;
  mutable std::vector<pid_t> seen_workers_;
  std::unique_ptr<FakeServiceManager> manager_;
};

}  // namespace harness
