#include "connect/stdio_server.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/asio_names.hpp"
#include "connect/link.hpp"
#include "shared/log.hpp"

namespace sb::connect {
namespace {

using namespace sb::asio_names;

constexpr std::size_t kStderrLineBytes = 4096;  // longer stderr lines are cut in the log
// Lines of the server's stderr logged a minute; the rest are counted (docs/connect.md).
constexpr std::uint64_t kStderrLinesPerMinute = 1000;

// `name` as execvp would find it: as given when it holds a slash, else the first
// executable file of that name in $PATH. Empty when there is none.
std::string find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::string_view dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  while (!dirs.empty()) {
    const auto colon = dirs.find(':');
    const std::string_view dir = dirs.substr(0, colon);
    dirs = colon == std::string_view::npos ? std::string_view() : dirs.substr(colon + 1);
    const std::string candidate = std::string(dir.empty() ? "." : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0 && !std::filesystem::is_directory(candidate))
      return candidate;
  }
  return {};
}

}  // namespace

bool one_message(std::string_view line) {
  const auto first = line.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos || (line[first] != '{' && line[first] != '[')) return false;
  return nlohmann::json::accept(line);
}

StdioServer::StdioServer(net::io_context& io, std::vector<std::string> command, std::string name)
    : io_(io),
      command_(std::move(command)),
      name_(std::move(name)),
      stdin_(io),
      stdout_(io),
      stderr_(io),
      exit_signal_(io) {}

StdioServer::~StdioServer() {
  *alive_ = false;
}

std::string StdioServer::start() {
  const std::string program = find_program(command_.front());
  if (program.empty()) return "no program `" + command_.front() + "` in PATH";
  int in[2], out[2], err[2];
  if (::pipe2(in, O_CLOEXEC) != 0) return std::string("pipe: ") + std::strerror(errno);
  base::UniqueFd in_read(in[0]), in_write(in[1]);
  if (::pipe2(out, O_CLOEXEC) != 0) return std::string("pipe: ") + std::strerror(errno);
  base::UniqueFd out_read(out[0]), out_write(out[1]);
  if (::pipe2(err, O_CLOEXEC) != 0) return std::string("pipe: ") + std::strerror(errno);
  base::UniqueFd err_read(err[0]), err_write(err[1]);

  auto spawned = base::spawn(base::SpawnRequest{
      .program = program,
      .args = std::vector<std::string>(command_.begin() + 1, command_.end()),
      .descriptors = {{in_read.get(), 0}, {out_write.get(), 1}, {err_write.get(), 2}},
      .parent_death_signal = SIGTERM,
  });
  if (auto* failure = std::get_if<std::string>(&spawned)) return *failure;
  child_ = std::make_unique<base::ChildProcess>(io_, std::move(std::get<base::Spawned>(spawned)));
  stdin_.assign(in_write.release());
  stdout_.assign(out_read.release());
  stderr_.assign(err_read.release());
  exit_signal_.expires_at(net::steady_timer::time_point::max());
  child_->async_wait([this, alive = alive_](int wait_status) {
    if (*alive) on_exit(wait_status);
  });
  net::co_spawn(io_, forward_stderr(), net::detached);
  log_info("started the MCP server", {{"computer", name_}, {"pid", std::to_string(child_->pid())}});
  return "";
}

void StdioServer::on_exit(int wait_status) {
  exit_status_ = wait_status;
  exit_signal_.cancel();
}

net::awaitable<bool> StdioServer::write(std::string_view message) {
  if (!stdin_.is_open()) co_return false;
  // MCP's stdio transport forbids a newline inside a message; compact JSON from the
  // switchboard has none, and anything else is written out again on one line.
  std::string line;
  if (message.find_first_of("\r\n") == std::string_view::npos) {
    line.assign(message);
  } else {
    line = nlohmann::json::parse(message, nullptr, false).dump();
  }
  line.push_back('\n');
  const auto [error, written] = co_await net::async_write(stdin_, net::buffer(line), kAwait);
  co_return !error;
}

net::awaitable<std::optional<std::string>> StdioServer::read() {
  for (;;) {
    if (const auto newline = pending_.find('\n'); newline != std::string::npos) {
      std::string line = pending_.substr(0, newline);
      pending_.erase(0, newline + 1);
      if (discarding_) {
        discarding_ = false;
        continue;
      }
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.find_first_not_of(" \t") == std::string::npos) continue;  // blank
      if (one_message(line)) co_return line;
      // A server spewing junk must not bury everything else in the journal: a line a
      // minute, with how many it stands for.
      if (const auto count = junk_lines_.due()) {
        log_warn("the MCP server wrote a line that is not one JSON-RPC message; not sent",
                 {{"computer", name_},
                  {"bytes", std::to_string(line.size())},
                  {"count", std::to_string(*count)}});
      }
      continue;
    }
    if (pending_.size() > kMaxMessageBytes) {
      if (const auto count = oversized_lines_.due()) {
        log_warn("the MCP server wrote a line over 16 MiB; not sent",
                 {{"computer", name_}, {"count", std::to_string(*count)}});
      }
      pending_.clear();
      discarding_ = true;
    }
    char chunk[65536];
    const auto [error, got] = co_await stdout_.async_read_some(net::buffer(chunk), kAwait);
    if (error) co_return std::nullopt;
    pending_.append(chunk, got);
  }
}

net::awaitable<void> StdioServer::forward_stderr() {
  LogAllowance allowance(kStderrLinesPerMinute);
  std::string pending;
  char chunk[4096];
  for (;;) {
    const auto [error, got] = co_await stderr_.async_read_some(net::buffer(chunk), kAwait);
    if (error) co_return;  // its stderr closed, or we were destroyed
    pending.append(chunk, got);
    for (auto newline = pending.find('\n'); newline != std::string::npos;
         newline = pending.find('\n')) {
      log_stderr_line(allowance, std::string_view(pending).substr(0, newline));
      pending.erase(0, newline + 1);
    }
    if (pending.size() > kStderrLineBytes) {
      log_stderr_line(allowance, pending);
      pending.clear();
    }
  }
}

// A chatty server is heard, a flooding one does not bury the rest of the journal.
void StdioServer::log_stderr_line(LogAllowance& allowance, std::string_view line) const {
  const auto verdict = allowance.take();
  if (verdict.withheld_before > 0) {
    log_warn("the MCP server's stderr lines past the allowance were not logged",
             {{"computer", name_}, {"count", std::to_string(verdict.withheld_before)}});
  }
  if (verdict.first_withheld) {
    log_warn(
        "the MCP server writes over 1000 stderr lines a minute; the rest of this minute "
        "is counted, not logged",
        {{"computer", name_}});
  }
  if (verdict.write) {
    log_info("server: " + std::string(line.substr(0, kStderrLineBytes)), {{"computer", name_}});
  }
}

net::awaitable<void> StdioServer::stop(std::chrono::milliseconds grace) {
  if (!child_ || stopped_) co_return;
  stopped_ = true;
  boost::system::error_code ignored;
  stdin_.close(ignored);
  if (!ended()) {
    ::kill(child_->pid(), SIGTERM);
    exit_signal_.expires_after(grace);
    co_await exit_signal_.async_wait(kAwait);
  }
  if (!ended()) {
    log_warn("the MCP server outlived its grace after SIGTERM; killing it", {{"computer", name_}});
    child_->kill();
    exit_signal_.expires_at(net::steady_timer::time_point::max());
    co_await exit_signal_.async_wait(kAwait);
  }
  stdout_.close(ignored);
  stderr_.close(ignored);
  log_info("the MCP server exited",
           {{"computer", name_}, {"status", base::describe_exit(*exit_status_)}});
}

}  // namespace sb::connect
