#include "harness/process.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "base/spawn.hpp"
#include "harness/wait.hpp"

namespace harness {

TempDir::TempDir(const std::string& prefix) {
  std::string pattern = (fs::temp_directory_path() / (prefix + "-XXXXXX")).string();
  if (!::mkdtemp(pattern.data()))
    throw std::runtime_error(std::string("mkdtemp: ") + std::strerror(errno));
  path_ = pattern;
}

TempDir::~TempDir() {
  if (std::getenv("SB_KEEP_TEMP")) return;
  std::error_code ignored;
  fs::remove_all(path_, ignored);
}

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("socket() failed");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof address;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    ::close(fd);
    throw std::runtime_error("cannot find a free port");
  }
  ::close(fd);
  return ntohs(address.sin_port);
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

namespace {

sb::base::UniqueFd open_output(const std::optional<fs::path>& path) {
  if (!path) return sb::base::UniqueFd(::open("/dev/null", O_WRONLY | O_CLOEXEC));
  return sb::base::UniqueFd(::open(path->c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
}

}  // namespace

// With the project's own spawn helper (base/spawn.hpp): nothing of this process (callers'
// sockets, fake computers' sockets) leaks into a child, where a copy would keep a
// connection open after the test closes it.
pid_t start_process(const std::vector<std::string>& argv, const std::optional<fs::path>& out,
                    const std::optional<fs::path>& err) {
  const sb::base::UniqueFd input(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  const sb::base::UniqueFd output = open_output(out);
  const sb::base::UniqueFd errors = open_output(err);
  if (!input.valid() || !output.valid() || !errors.valid())
    throw std::runtime_error("opening the output files of " + argv[0] + ": " +
                             std::strerror(errno));
  auto spawned = sb::base::spawn(sb::base::SpawnRequest{
      .program = argv[0],
      .args = std::vector<std::string>(argv.begin() + 1, argv.end()),
      .descriptors = {{input.get(), STDIN_FILENO},
                      {output.get(), STDOUT_FILENO},
                      {errors.get(), STDERR_FILENO}},
      .parent_death_signal = SIGTERM,
  });
  if (auto* failure = std::get_if<std::string>(&spawned))
    throw std::runtime_error("starting " + argv[0] + ": " + *failure);
  // The caller reaps it by pid; the pidfd closes here.
  return std::get<sb::base::Spawned>(spawned).pid;
}

std::optional<int> reap_within(pid_t pid, std::chrono::milliseconds timeout) {
  std::optional<int> status;
  eventually(
      [&] {
        int raw = 0;
        const pid_t done = ::waitpid(pid, &raw, WNOHANG);
        if (done == pid) {
          status = raw;
          return true;
        }
        return done < 0;  // not our child any more: nothing to wait for
      },
      timeout);
  return status;
}

int exit_code_of(int wait_status) {
  return WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -WTERMSIG(wait_status);
}

void stop_process(pid_t pid, std::chrono::milliseconds grace) {
  if (pid <= 0) return;
  ::kill(pid, SIGTERM);
  if (!reap_within(pid, grace)) {
    ::kill(pid, SIGKILL);
    reap_within(pid, std::chrono::seconds(5));
  }
}

CommandResult run_command(const std::vector<std::string>& argv, const fs::path& scratch_dir,
                          std::chrono::milliseconds timeout) {
  static int counter = 0;
  const std::string stem = "cmd-" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
  const fs::path out = scratch_dir / (stem + ".out");
  const fs::path err = scratch_dir / (stem + ".err");
  const pid_t pid = start_process(argv, out, err);
  CommandResult result;
  auto status = reap_within(pid, timeout);
  if (!status) {
    ::kill(pid, SIGKILL);
    status = reap_within(pid, std::chrono::seconds(5));
  } else if (WIFEXITED(*status)) {
    result.exit_code = WEXITSTATUS(*status);
  }
  result.out = read_file(out);
  result.err = read_file(err);
  std::error_code ignored;
  fs::remove(out, ignored);
  fs::remove(err, ignored);
  return result;
}

bool process_alive(pid_t pid) {
  const char state = process_state(pid);
  return state != 0 && state != 'Z' && state != 'X';
}

std::string proc_status_field(pid_t pid, const std::string& field) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field + ":", 0) == 0) {
      const auto value = line.find_first_not_of(" \t", field.size() + 1);
      return value == std::string::npos ? "" : line.substr(value);
    }
  }
  return "";
}

std::optional<long> status_kib(pid_t pid, const std::string& field) {
  const std::string value = proc_status_field(pid, field);  // "1234 kB"
  if (value.empty()) return std::nullopt;
  return std::stol(value);
}

char process_state(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return 0;
  const auto paren = text.rfind(')');
  if (paren == std::string::npos || paren + 2 >= text.size()) return 0;
  return text[paren + 2];
}

pid_t parent_pid(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return -1;
  const auto paren = text.rfind(')');
  std::istringstream rest(text.substr(paren + 2));
  char state = 0;
  pid_t parent = -1;
  rest >> state >> parent;
  return parent;
}

ScopedEnv::ScopedEnv(std::string name, const std::string& value) : name_(std::move(name)) {
  if (const char* old = std::getenv(name_.c_str())) previous_ = old;
  ::setenv(name_.c_str(), value.c_str(), 1);
}

ScopedEnv::~ScopedEnv() {
  if (previous_) {
    ::setenv(name_.c_str(), previous_->c_str(), 1);
  } else {
    ::unsetenv(name_.c_str());
  }
}

}  // namespace harness
