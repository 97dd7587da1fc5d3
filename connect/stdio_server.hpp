// An MCP server that switchboard-connect runs: a child process speaking MCP's stdio
// transport, one JSON-RPC message per line each way. Its stderr goes to our log, line by
// line, with the computer's name (docs/connect.md, "Behaviour").
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

#include "base/spawn.hpp"
#include "connect/mcp_server.hpp"
#include "shared/log.hpp"

namespace sb::connect {

class StdioServer : public McpServer {
 public:
  // `command`: the program and its arguments; `name`: for log lines.
  StdioServer(boost::asio::io_context& io, std::vector<std::string> command, std::string name);
  ~StdioServer();
  StdioServer(const StdioServer&) = delete;
  StdioServer& operator=(const StdioServer&) = delete;

  // Starts the program with pipes for its stdin, stdout and stderr.
  std::string start() override;
  // Whether it has exited.
  bool ended() const override { return exit_status_.has_value(); }
  // Writes one message and a newline to its stdin.
  boost::asio::awaitable<bool> write(std::string_view message) override;
  // The next line of its stdout that is one JSON-RPC message; a line that is not is
  // logged and skipped. nullopt once its stdout has ended.
  boost::asio::awaitable<std::optional<std::string>> read() override;
  // Closes its stdin and sends SIGTERM; SIGKILL if it has not exited after `grace`.
  // Returns once it has exited, and logs how.
  boost::asio::awaitable<void> stop(std::chrono::milliseconds grace) override;

 private:
  boost::asio::awaitable<void> forward_stderr();
  void log_stderr_line(LogAllowance& allowance, std::string_view line) const;
  void on_exit(int wait_status);

  boost::asio::io_context& io_;
  std::vector<std::string> command_;
  std::string name_;
  std::unique_ptr<base::ChildProcess> child_;
  boost::asio::posix::stream_descriptor stdin_;
  boost::asio::posix::stream_descriptor stdout_;
  boost::asio::posix::stream_descriptor stderr_;
  boost::asio::steady_timer exit_signal_;  // cancelled when the child has exited
  std::string pending_;                    // stdout read but not yet returned as lines
  bool discarding_ = false;                // inside a line longer than the limit
  LogThrottle junk_lines_;                 // lines that are not JSON-RPC, logged a minute
  LogThrottle oversized_lines_;
  bool stopped_ = false;
  std::optional<int> exit_status_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // for the stderr reader
};

}  // namespace sb::connect
