#include "base/spawn.hpp"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <span>

extern char** environ;

namespace sb::base {
namespace {

// What the child reports through its error pipe before it gives up: which step, errno.
struct ChildFailure {
  int step;
  int error;
};

constexpr const char* kSteps[] = {"dup2", "clearing close-on-exec", "close_range", "exec",
                                  "parent death signal"};
constexpr int kStepCount = 5;

[[noreturn]] void child_fail(int pipe, int step) {
  const ChildFailure failure{step, errno};
  [[maybe_unused]] const auto written = ::write(pipe, &failure, sizeof failure);
  ::_exit(127);
}

// Runs in the child between fork and exec: async-signal-safe calls only.
[[noreturn]] void exec_child(const SpawnRequest& request,
                             const std::vector<std::pair<int, int>>& descriptors, int executable,
                             char* const* argv, int error_pipe, pid_t parent) {
  if (request.parent_death_signal != 0) {
    if (::prctl(PR_SET_PDEATHSIG, request.parent_death_signal) != 0) child_fail(error_pipe, 4);
    if (::getppid() != parent) ::_exit(127);  // the parent is already gone
  }
  for (const auto& [from, to] : descriptors) {
    if (from == to) {
      if (::fcntl(to, F_SETFD, 0) != 0) child_fail(error_pipe, 1);
    } else if (::dup2(from, to) < 0) {
      child_fail(error_pipe, 0);
    }
  }
  if (::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) != 0) child_fail(error_pipe, 2);
  // An ignored signal stays ignored across exec; a program we start gets SIGPIPE's default
  // whatever ours is (ours ignore it and say so themselves).
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  ::sigaction(SIGPIPE, &default_action, nullptr);
  for (const auto& [from, to] : descriptors) {
    if (to > 2 && ::fcntl(to, F_SETFD, 0) != 0) child_fail(error_pipe, 1);
  }
  if (executable >= 0) {
    ::execveat(executable, "", argv, environ, AT_EMPTY_PATH);
  } else {
    ::execve(request.program.c_str(), argv, environ);
  }
  child_fail(error_pipe, 3);
}

int highest_target(const std::vector<std::pair<int, int>>& pairs) {
  int highest = 2;
  for (const auto& pair : pairs) highest = std::max(highest, pair.second);
  return highest;
}

bool overwritten_by(int fd, std::span<const std::pair<int, int>> pairs) {
  return std::any_of(pairs.begin(), pairs.end(), [&](const auto& pair) {
    return pair.second == fd && pair.first != pair.second;
  });
}

// `fd`, or a copy of it above every target when one of `pairs` would overwrite it (the
// copy lives in `copies` until the fork is done); -1 when no copy can be made.
int out_of_reach(int fd, std::span<const std::pair<int, int>> pairs, int highest,
                 std::vector<UniqueFd>& copies) {
  if (fd < 0 || !overwritten_by(fd, pairs)) return fd;
  const int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, highest + 1);
  if (copy >= 0) copies.emplace_back(copy);
  return copy;
}

// The child moves descriptors into place in order, so a source that is the target of an
// earlier pair would be overwritten before its turn: such a source is copied out of the way
// first.
std::variant<std::vector<std::pair<int, int>>, std::string> safe_descriptor_order(
    const std::vector<std::pair<int, int>>& requested, std::vector<UniqueFd>& copies) {
  std::vector<std::pair<int, int>> pairs = requested;
  const int highest = highest_target(pairs);
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const auto earlier = std::span(pairs).first(i);
    pairs[i].first = out_of_reach(pairs[i].first, earlier, highest, copies);
    if (pairs[i].first < 0) return std::string("fcntl: ") + std::strerror(errno);
  }
  return pairs;
}

}  // namespace

std::variant<Spawned, std::string> spawn(const SpawnRequest& request) {
  std::vector<UniqueFd> copies;
  auto ordered = safe_descriptor_order(request.descriptors, copies);
  if (auto* failure = std::get_if<std::string>(&ordered)) return *failure;
  const auto& descriptors = std::get<std::vector<std::pair<int, int>>>(ordered);
  // The program and the error pipe are used after every pair is in place: a pair must not
  // have overwritten them (a process started with descriptors handed over has low ones free).
  const int highest = highest_target(descriptors);
  const int executable = out_of_reach(request.executable, descriptors, highest, copies);
  if (request.executable >= 0 && executable < 0)
    return std::string("fcntl: ") + std::strerror(errno);

  std::vector<std::string> strings{request.program.filename().string()};
  strings.insert(strings.end(), request.args.begin(), request.args.end());
  std::vector<char*> argv;
  for (auto& text : strings) argv.push_back(text.data());
  argv.push_back(nullptr);

  int error_pipe[2];
  if (::pipe2(error_pipe, O_CLOEXEC) != 0) return std::string("pipe: ") + std::strerror(errno);
  UniqueFd read_end(error_pipe[0]);
  UniqueFd write_end(error_pipe[1]);
  const int reporting = out_of_reach(write_end.get(), descriptors, highest, copies);
  if (reporting < 0) return std::string("fcntl: ") + std::strerror(errno);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return std::string("fork: ") + std::strerror(errno);
  if (pid == 0) exec_child(request, descriptors, executable, argv.data(), reporting, parent);
  write_end.reset();
  copies.clear();  // the child's write end must be the only one left

  // The pipe closes at a successful exec (close-on-exec) and carries the failure otherwise.
  ChildFailure failure{};
  long got;
  do {
    got = ::read(read_end.get(), &failure, sizeof failure);
  } while (got < 0 && errno == EINTR);
  if (got > 0) {
    int ignored;
    ::waitpid(pid, &ignored, 0);
    const int step = failure.step >= 0 && failure.step < kStepCount ? failure.step : 3;
    return std::string(kSteps[step]) + " in the child: " + std::strerror(failure.error);
  }
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) {
    const int error = errno;
    int ignored;
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &ignored, 0);
    return std::string("pidfd_open: ") + std::strerror(error);
  }
  ::fcntl(pidfd, F_SETFD, FD_CLOEXEC);  // pidfds are close-on-exec already; said plainly
  return Spawned{pid, UniqueFd(pidfd)};
}

std::string describe_exit(int wait_status) {
  if (WIFEXITED(wait_status)) return "exit code " + std::to_string(WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) {
    const int signal = WTERMSIG(wait_status);
    const char* name = ::strsignal(signal);
    return "signal " + std::to_string(signal) + (name ? std::string(" (") + name + ")" : "");
  }
  return "wait status " + std::to_string(wait_status);
}

ChildProcess::ChildProcess(boost::asio::io_context& io, Spawned spawned)
    : pid_(spawned.pid), pidfd_(io, spawned.pidfd.release()), reap_retry_(io) {}

ChildProcess::~ChildProcess() {
  if (reaped_) return;
  kill();
  int ignored;
  ::waitpid(pid_, &ignored, 0);
}

void ChildProcess::kill() {
  if (!reaped_) ::kill(pid_, SIGKILL);
}

// The wait never blocks the event loop: a pidfd can turn readable before the exit can be
// collected (seen once under the sanitizers: the supervisor hung in waitpid on a worker
// shown as a zombie). Then the wait is tried again a moment later.
void ChildProcess::async_wait(std::function<void(int wait_status)> exited) {
  pidfd_.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                    [this, exited = std::move(exited)](const boost::system::error_code& error) {
                      if (error) return;  // cancelled: this object is going away
                      reap(std::move(exited));
                    });
}

void ChildProcess::reap(std::function<void(int wait_status)> exited) {
  int status = 0;
  const pid_t done = ::waitpid(pid_, &status, WNOHANG);
  if (done == 0) {
    reap_retry_.expires_after(std::chrono::milliseconds(10));
    reap_retry_.async_wait(
        [this, exited = std::move(exited)](const boost::system::error_code& error) mutable {
          if (!error) reap(std::move(exited));
        });
    return;
  }
  if (done != pid_) return;
  reaped_ = true;
  exited(status);
}

}  // namespace sb::base
