// The MCP server that switchboard-connect runs: a child process speaking MCP's stdio
// transport, one JSON-RPC message per line each way. Its stderr goes to our log, line by
// line, with the computer's name. One child is one MCP session: the switchboard
// initializes afresh after every attach, so a child that has been talked to is never
// reused (docs/protocol.md, "switchboard-connect").
#pragma once

#include <sys/types.h>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ipc/spawn.hpp"

namespace sb::connect {

class StdioServer {
 public:
  // `command`: the program and its arguments; `name`: for log lines.
  StdioServer(boost::asio::io_context& io, std::vector<std::string> command, std::string name);
  ~StdioServer();
  StdioServer(const StdioServer&) = delete;
  StdioServer& operator=(const StdioServer&) = delete;

  // Starts the program with pipes for its stdin, stdout and stderr. What failed, or "".
  std::string start();
  pid_t pid() const;
  // Whether a message has been written to it (then it is not a fresh session any more).
  bool used() const { return used_; }
  // Whether it has exited (its wait status is then in exit_status()).
  bool exited() const { return exit_status_.has_value(); }
  std::optional<int> exit_status() const { return exit_status_; }

  // Writes one message and a newline to its stdin; false once it cannot take more.
  boost::asio::awaitable<bool> write(std::string_view message);
  // The next line of its stdout that is one JSON-RPC message; a line that is not is
  // logged and skipped. nullopt once its stdout has ended.
  boost::asio::awaitable<std::optional<std::string>> read();
  // Closes its stdin and sends SIGTERM; SIGKILL if it has not exited after `grace`.
  // Returns once it has exited.
  boost::asio::awaitable<void> stop(std::chrono::milliseconds grace);

 private:
  boost::asio::awaitable<void> forward_stderr();
  void on_exit(int wait_status);

  boost::asio::io_context& io_;
  std::vector<std::string> command_;
  std::string name_;
  std::unique_ptr<ipc::ChildProcess> child_;
  boost::asio::posix::stream_descriptor stdin_;
  boost::asio::posix::stream_descriptor stdout_;
  boost::asio::posix::stream_descriptor stderr_;
  boost::asio::steady_timer exit_signal_;  // cancelled when the child has exited
  std::string pending_;                    // stdout read but not yet returned as lines
  bool discarding_ = false;                // inside a line longer than the limit
  bool used_ = false;
  std::optional<int> exit_status_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // for the stderr reader
};

}  // namespace sb::connect
