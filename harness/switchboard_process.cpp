#include "harness/switchboard_process.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <fstream>
#include <stdexcept>

#include "harness/http_client.hpp"
#include "harness/wait.hpp"

namespace harness {

using json = nlohmann::json;

SwitchboardProcess::SwitchboardProcess(const ConfigBuilder& config, fs::path program,
                                       std::chrono::milliseconds start_timeout)
    : program_(std::move(program)),
      start_timeout_(start_timeout),
      body_(config.toml()),
      audit_(dir_.path() / "audit.jsonl") {
  spawn();
}

SwitchboardProcess::SwitchboardProcess(const ConfigBuilder& config, UnderServiceManager)
    : program_(bin_dir() / "switchboard"),
      start_timeout_(std::chrono::seconds(15)),
      body_(config.toml()),
      audit_(dir_.path() / "audit.jsonl") {
  manager_ = std::make_unique<FakeServiceManager>(dir());
  port_ = free_port();
  write_file(body_);
  pid_ = manager_->start(
      FakeServiceManager::Unit{.argv = {program_.string(), "serve", "-c", config_path().string()},
                               .stdout_path = dir() / "stdout.log",
                               .stderr_path = dir() / "stderr.log"});
  wait_healthy();
}

void SwitchboardProcess::wait_healthy() {
  const bool healthy = eventually(
      [&] {
        try {
          return http_get(port_, "/healthz").status == 200;
        } catch (const std::exception&) {
          return false;
        }
      },
      start_timeout_);
  if (!healthy)
    throw std::runtime_error("switchboard did not become healthy; stderr:\n" + stderr_text());
}

void SwitchboardProcess::service_restart() {
  pid_ = manager_->restart();
  wait_healthy();
}

void SwitchboardProcess::service_crash(int signal, const std::function<void()>& meanwhile) {
  pid_ = manager_->crash(signal, meanwhile);
  wait_healthy();
}

void SwitchboardProcess::write_file(const std::string& toml) {
  const std::string text = "listen = " + toml_string("127.0.0.1:" + std::to_string(port_)) +
                           "\naudit_path = " + toml_string(audit_path().string()) +
                           "\ncontrol_socket = " + toml_string(control_socket().string()) + "\n" +
                           toml;
  // Written aside and renamed, so a reload never reads half a file.
  const fs::path temporary = dir() / "switchboard.toml.new";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << text;
  }
  fs::rename(temporary, config_path());
}

void SwitchboardProcess::restart(bool same_port) {
  if (pid_ > 0) throw std::runtime_error("restart: the switchboard is still running");
  spawn(same_port);
}

void SwitchboardProcess::spawn(bool same_port) {
  // The free port may be taken by someone else before the supervisor binds it: retry
  // (on another one, unless it must be this one).
  for (int attempt = 0; attempt < (same_port ? 1 : 3); ++attempt) {
    if (!same_port) port_ = free_port();
    write_file(body_);
    pid_ = start_process({program_.string(), "serve", "-c", config_path().string()},
                         dir() / "stdout.log", dir() / "stderr.log");
    bool healthy = false;
    std::optional<int> exited;
    eventually(
        [&] {
          int raw = 0;
          if (::waitpid(pid_, &raw, WNOHANG) == pid_) {
            exited = raw;
            return true;
          }
          try {
            healthy = http_get(port_, "/healthz").status == 200;
          } catch (const std::exception&) {
            healthy = false;
          }
          return healthy;
        },
        start_timeout_);
    if (healthy) return;
    if (!exited) {
      ::kill(pid_, SIGKILL);
      reap_within(pid_, std::chrono::seconds(5));
    }
    pid_ = -1;
    if (stderr_text().find("binding") == std::string::npos) break;
  }
  throw std::runtime_error("switchboard did not become healthy; stderr:\n" + stderr_text());
}

SwitchboardProcess::~SwitchboardProcess() {
  stop();
}

void SwitchboardProcess::stop() {
  // A worker a test left stopped would never exit.
  for (pid_t worker : seen_workers_) ::kill(worker, SIGCONT);
  if (manager_) {
    manager_->stop();
    pid_ = -1;
    seen_workers_.clear();
    return;
  }
  stop_process(pid_, std::chrono::seconds(8));
  pid_ = -1;
  for (pid_t worker : seen_workers_) {
    if (!eventually([&] { return !process_alive(worker); }, std::chrono::seconds(5)))
      ::kill(worker, SIGKILL);
  }
  seen_workers_.clear();
}

std::string SwitchboardProcess::diagnostics() const {
  return "---- switchboard stderr (" + dir().string() + ") ----\n" + stderr_text() +
         "---- audit ----\n" + audit_.text() + "----\n";
}

std::string SwitchboardProcess::stderr_text() const {
  return read_file(dir() / "stderr.log");
}

void SwitchboardProcess::write_config(const ConfigBuilder& config) {
  body_ = config.toml();
  write_file(body_);
}

void SwitchboardProcess::reload(const ConfigBuilder& config) {
  const std::size_t before = audit_.count("config_reloaded");
  write_config(config);
  send_signal(SIGHUP);
  if (!audit_.wait_for_count("config_reloaded", before + 1)) {
    throw std::runtime_error("reload was not applied; stderr:\n" + stderr_text());
  }
}

void SwitchboardProcess::send_signal(int signal) const {
  if (pid_ > 0) ::kill(pid_, signal);
}

std::optional<int> SwitchboardProcess::wait_exit(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return std::nullopt;
  const auto status = reap_within(pid_, timeout);
  if (!status) return std::nullopt;
  pid_ = -1;
  return exit_code_of(*status);
}

CommandResult SwitchboardProcess::run_cli(std::vector<std::string> args, bool with_config) const {
  std::vector<std::string> argv{(bin_dir() / "switchboard").string()};
  argv.insert(argv.end(), args.begin(), args.end());
  if (with_config) {
    argv.push_back("-c");
    argv.push_back(config_path().string());
  }
  return run_command(argv, dir());
}

void SwitchboardProcess::remember_workers(const json& rows) const {
  for (const auto& row : rows) {
    const pid_t pid = row.value("pid", 0);
    if (pid > 0 &&
        std::find(seen_workers_.begin(), seen_workers_.end(), pid) == seen_workers_.end())
      seen_workers_.push_back(pid);
  }
}

json SwitchboardProcess::workers() const {
  const auto result = run_cli({"workers", "--json"});
  if (result.exit_code != 0) {
    // What the supervisor was doing meanwhile is what explains a failure in CI.
    throw std::runtime_error("switchboard workers --json failed (" +
                             std::to_string(result.exit_code) + "): " + result.err + diagnostics());
  }
  json parsed = json::parse(result.out, nullptr, false);
  if (parsed.is_discarded() || !parsed.contains("workers")) {
    throw std::runtime_error("switchboard workers --json printed: " + result.out);
  }
  remember_workers(parsed["workers"]);
  return parsed["workers"];
}

json SwitchboardProcess::worker(const std::string& computer) const {
  for (const auto& row : workers()) {
    if (row.value("computer", "") == computer) return row;
  }
  throw std::runtime_error("no worker row for " + computer);
}

}  // namespace harness
