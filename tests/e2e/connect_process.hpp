// switchboard-connect as the end-to-end tests run it: one process, its log in a file, its
// MCP server's pid read from the log.
#pragma once

#include <signal.h>

#include <regex>

#include "tests/e2e/e2e_helpers.hpp"

namespace sbtest {

// One switchboard-connect process, stopped (SIGTERM, then SIGKILL) and reaped at the end.
class ConnectProcess {
 public:
  ConnectProcess(std::vector<std::string> argv, fs::path log)
      : log_(std::move(log)), pid_(start_process(argv, std::nullopt, log_)) {}
  ~ConnectProcess() {
    if (pid_ > 0) stop_process(pid_, std::chrono::seconds(10));
  }
  ConnectProcess(const ConnectProcess&) = delete;
  ConnectProcess& operator=(const ConnectProcess&) = delete;

  pid_t pid() const { return pid_; }
  std::string log() const { return read_file(log_); }
  bool wait_log(const std::string& text) const {
    return eventually([&] { return log().find(text) != std::string::npos; });
  }
  // Its exit status once it has exited on its own (bounded), or nullopt.
  std::optional<int> wait_exit(std::chrono::milliseconds timeout = kDefaultWait) {
    const auto status = reap_within(pid_, timeout);
    if (!status) return std::nullopt;
    pid_ = -1;
    return exit_code_of(*status);
  }
  // The pid of the MCP server it started last (from its log), or -1.
  pid_t server_pid() const {
    const std::string text = log();
    const std::regex started("started the MCP server.*pid=([0-9]+)");
    pid_t pid = -1;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), started);
         it != std::sregex_iterator(); ++it)
      pid = std::stoi((*it)[1]);
    return pid;
  }

 private:
  fs::path log_;
  pid_t pid_;
};

// The ids the server saw on its calls of `tool`, in order, from its notes in the log.
inline std::vector<std::string> server_side_ids(const std::string& log, const std::string& tool) {
  const std::regex called("server: called " + tool + " id=([^ ]+)");
  std::vector<std::string> ids;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), called); it != std::sregex_iterator();
       ++it)
    ids.push_back((*it)[1]);
  return ids;
}

}  // namespace sbtest
