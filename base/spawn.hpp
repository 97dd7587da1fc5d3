// Starting a program that holds exactly the descriptors it is given, and watching it exit.
//
// Why not Boost.Process: in Boost 1.81 its v2 launcher's descriptor whitelist closes one
// descriptor too few, and it neither checks nor reports a failed dup2 or close_range in
// the child. The one step that keeps the listener, callers' connections and other
// computers' sockets out of a worker must not fail silently, so it is done here: each
// step in the child is checked, and a failure comes back to the parent as an answer.
#pragma once

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "base/unique_fd.hpp"

namespace sb::base {

struct SpawnRequest {
  std::filesystem::path program;  // executed by path when `executable` is not set
  // A descriptor of the program, opened once (O_PATH) and executed by descriptor, so
  // that replacing the file on disk later changes nothing about what runs.
  int executable = -1;
  std::vector<std::string> args;  // after argv[0], which is the program's file name
  // {from, to}: the child has `from` as descriptor `to`; every other descriptor above
  // stderr is closed at exec.
  std::vector<std::pair<int, int>> descriptors;
  // Sent to the child when the thread that spawned it exits (PR_SET_PDEATHSIG); 0: none.
  // Only for a parent that spawns from the thread that lives as long as it does.
  int parent_death_signal = 0;
};

struct Spawned {
  pid_t pid = -1;
  UniqueFd pidfd;  // readable once the child has exited
};

// The child, or what failed, in the parent or in the child before its exec.
std::variant<Spawned, std::string> spawn(const SpawnRequest& request);

// How a wait status reads in a log line: "exit code 3", "signal 31 (Bad system call)".
std::string describe_exit(int wait_status);

// A spawned child of an Asio program: its exit is an async event, and a child still
// running when this is destroyed is killed and reaped.
class ChildProcess {
 public:
  ChildProcess(boost::asio::io_context& io, Spawned spawned);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // `exited` gets the wait status, once; not if this is destroyed first.
  void async_wait(std::function<void(int wait_status)> exited);
  void kill();

 private:
  void reap(std::function<void(int wait_status)> exited);

  pid_t pid_;
  bool reaped_ = false;
  boost::asio::posix::stream_descriptor pidfd_;
  boost::asio::steady_timer reap_retry_;  // the pidfd said exited, the wait not yet
};

}  // namespace sb::base
