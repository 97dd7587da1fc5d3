// A stand-in for systemd running one Type=notify service with a file descriptor store, as
// sd_notify(3) and sd_listen_fds(3) describe it, for tests without systemd: the notify
// socket (READY=1, FDSTORE=1 with FDNAME=, FDSTOREREMOVE=1, BARRIER=1; only the main
// process may store, as NotifyAccess=main has it), the store, and each start handing the
// stored descriptors over from descriptor 3 on with LISTEN_FDS, LISTEN_FDNAMES and
// LISTEN_PID. Restart, crash and stop wait for every process of the service to be gone (its
// process group; this process becomes their subreaper), as systemd waits for the unit's
// control group to empty.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/unique_fd.hpp"

namespace harness {

class FakeServiceManager {
 public:
  struct Unit {
    std::vector<std::string> argv;
    std::filesystem::path stdout_path;
    std::filesystem::path stderr_path;
    int restart_signal = SIGUSR1;  // RestartKillSignal=
    std::size_t store_max = 4096;  // FileDescriptorStoreMax=
  };

  // The notify socket is made in `dir`.
  explicit FakeServiceManager(const std::filesystem::path& dir);
  ~FakeServiceManager();
  FakeServiceManager(const FakeServiceManager&) = delete;
  FakeServiceManager& operator=(const FakeServiceManager&) = delete;

  // Starts the service's main process with what the store holds; its pid.
  pid_t start(const Unit& unit);
  // `systemctl restart`: RestartKillSignal to the main process, then a start once every
  // process of the service has ended.
  pid_t restart();
  // A crash: `signal` to the main process, then, as Restart=on-failure does, a start once
  // every process of the service has ended; `meanwhile` runs just before that start (a
  // test damaging what the store holds, say).
  pid_t crash(int signal, const std::function<void()>& meanwhile = {});
  // Overwrites the start of the memory file stored under `name` with `bytes`: a record
  // damaged while no supervisor runs. False when nothing is stored under that name.
  bool overwrite_stored(const std::string& name, const std::string& bytes);
  // `systemctl stop`: SIGTERM to the main process (KillMode=mixed), every process waited
  // for (SIGKILL after `grace`), and the store emptied.
  void stop(std::chrono::milliseconds grace = std::chrono::seconds(10));

  pid_t main_pid() const { return main_pid_; }
  // The wait status of the main process's last exit.
  std::optional<int> last_exit() const { return last_exit_; }
  // The names of what the store holds now, in the order stored.
  std::vector<std::string> stored() const;
  // READY=1 messages since the last start.
  std::size_t readies() const { return readies_; }

 private:
  struct Entry {
    std::string name;
    sb::base::UniqueFd fd;
  };
  void serve_notifications();
  void handle(const std::string& message, pid_t sender, std::vector<sb::base::UniqueFd> fds);
  void wait_until_empty(std::chrono::milliseconds grace);

  std::filesystem::path socket_path_;
  sb::base::UniqueFd socket_;
  sb::base::UniqueFd wake_;  // the write end of a pipe that ends the notification thread
  sb::base::UniqueFd woken_;
  std::thread notifications_;
  mutable std::mutex mutex_;
  std::vector<Entry> store_;
  Unit unit_;
  std::atomic<pid_t> main_pid_{-1};
  std::optional<int> last_exit_;
  std::atomic<std::size_t> readies_{0};
};

}  // namespace harness
