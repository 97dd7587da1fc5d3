#include "bench/switchboard_process.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
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
#include <thread>

#include "ipc/spawn.hpp"
#include "shared/verifier.hpp"

namespace sbbench {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// A port nobody listens on right now.
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    if (fd >= 0) ::close(fd);
    throw std::runtime_error(std::string("finding a free port: ") + std::strerror(errno));
  }
  ::close(fd);
  return ntohs(address.sin_port);
}

bool port_accepts(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  const bool connected =
      fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  if (fd >= 0) ::close(fd);
  return connected;
}

// Waits for `pid` until `deadline`; its wait status, or nothing if it is still running.
std::optional<int> wait_until(pid_t pid, Clock::time_point deadline) {
  for (;;) {
    int status = 0;
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) return status;
    if (done < 0) return -1;
    if (Clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(5ms);
  }
}

bool alive(pid_t pid) {
  if (pid <= 0 || ::kill(pid, 0) != 0) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  std::getline(stat, text);
  const auto close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] != 'Z';
}

}  // namespace

// With the project's spawn helper (ipc/spawn.hpp): no descriptor of ours leaks into the
// child, and the child gets SIGTERM when the bench exits, however it exits.
pid_t spawn(const std::vector<std::string>& argv, int stdout_fd, int stderr_fd) {
  const sb::ipc::UniqueFd null_fd(::open("/dev/null", O_RDWR | O_CLOEXEC));
  auto spawned = sb::ipc::spawn(sb::ipc::SpawnRequest{
      .program = argv[0],
      .args = std::vector<std::string>(argv.begin() + 1, argv.end()),
      .descriptors = {{null_fd.get(), 0},
                      {stdout_fd >= 0 ? stdout_fd : null_fd.get(), 1},
                      {stderr_fd >= 0 ? stderr_fd : null_fd.get(), 2}},
      .parent_death_signal = SIGTERM,
  });
  if (auto* failure = std::get_if<std::string>(&spawned))
    throw std::runtime_error("starting " + argv[0] + ": " + *failure);
  return std::get<sb::ipc::Spawned>(spawned).pid;
}

fs::path own_directory() {
  return fs::read_symlink("/proc/self/exe").parent_path();
}

TempDir::TempDir() {
  std::string pattern = (fs::temp_directory_path() / "sb-bench-XXXXXX").string();
  if (!::mkdtemp(pattern.data()))
    throw std::runtime_error(std::string("mkdtemp: ") + std::strerror(errno));
  path_ = pattern;
}

TempDir::~TempDir() {
  if (std::getenv("SB_BENCH_KEEP")) return;
  std::error_code ignored;
  fs::remove_all(path_, ignored);
}

std::optional<std::string> run_capture(const std::vector<std::string>& argv,
                                       std::chrono::milliseconds timeout) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return std::nullopt;
  pid_t child;
  try {
    child = spawn(argv, pipe_fds[1], -1);
  } catch (const std::exception&) {
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    return std::nullopt;
  }
  ::close(pipe_fds[1]);
  const auto deadline = Clock::now() + timeout;
  std::string out;
  char chunk[4096];
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    pollfd readable{pipe_fds[0], POLLIN, 0};
    if (left.count() <= 0 || ::poll(&readable, 1, static_cast<int>(left.count())) <= 0) break;
    const ssize_t got = ::read(pipe_fds[0], chunk, sizeof chunk);
    if (got <= 0) break;
    out.append(chunk, static_cast<std::size_t>(got));
  }
  ::close(pipe_fds[0]);
  auto status = wait_until(child, deadline);
  if (!status) {
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    return std::nullopt;
  }
  if (!WIFEXITED(*status) || WEXITSTATUS(*status) != 0) return std::nullopt;
  return out;
}

SwitchboardProcess::SwitchboardProcess(int computers, std::chrono::milliseconds start_timeout) {
  const std::string client_token = sb::generate_secret();
  token_ = client_token;
  std::ostringstream toml;
  port_ = free_port();
  toml << "listen = \"127.0.0.1:" << port_ << "\"\n"
       << "max_inflight = 64\n"
       << "audit_path = \"" << (dir_.path() / "audit.jsonl").string() << "\"\n"
       << "control_socket = \"" << (dir_.path() / "control.sock").string() << "\"\n\n";
  for (int i = 0; i < computers; ++i) {
    ComputerIdentity computer{.name = std::string("c").append(std::to_string(i)),
                              .secret = sb::generate_secret()};
    toml << "[[computer]]\nname = \"" << computer.name << "\"\nsecret_sha256 = \""
         << sb::render_verifier(sb::verifier_of(computer.secret)) << "\"\n\n";
    computers_.push_back(std::move(computer));
  }
  toml << "[[client]]\nname = \"bench\"\ntoken_sha256 = \""
       << sb::render_verifier(sb::verifier_of(client_token)) << "\"\n"
       << "default_computer = \"c0\"\ncomputers = { \"*\" = [\"*\"] }\nmax_inflight = 64\n";
  std::ofstream(config_path()) << toml.str();
  start(start_timeout);
}

void SwitchboardProcess::start(std::chrono::milliseconds timeout) {
  const std::vector<std::string> argv{(own_directory() / "switchboard").string(), "serve", "-c",
                                      config_path().string()};
  const int log_fd = ::open((dir_.path() / "switchboard.log").c_str(),
                            O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  pid_ = spawn(argv, log_fd, log_fd);
  ::close(log_fd);
  const auto deadline = Clock::now() + timeout;
  auto fail = [&](const std::string& why) {
    const std::string tail = log_tail();
    stop();
    throw std::runtime_error(why + "\n--- switchboard log ---\n" + tail);
  };
  while (!port_accepts(port_)) {
    if (wait_until(pid_, Clock::now())) {
      pid_ = -1;
      fail("switchboard serve exited at start");
    }
    if (Clock::now() > deadline) fail("switchboard serve did not listen in time");
    std::this_thread::sleep_for(10ms);
  }
  // Every worker up (hello received): attaches then measure the attach, not the spawn.
  for (;;) {
    const auto rows = workers();
    bool all_up = rows && rows->size() == computers_.size();
    if (rows) {
      for (const auto& row : *rows) all_up = all_up && row.value("state", "") != "starting";
    }
    if (all_up) break;
    if (Clock::now() > deadline) fail("the workers did not all start in time");
    std::this_thread::sleep_for(20ms);
  }
  for (pid_t pid : worker_pids()) seen_workers_.push_back(pid);
}

SwitchboardProcess::~SwitchboardProcess() {
  stop();
}

std::optional<nlohmann::json> SwitchboardProcess::workers() const {
  const auto out = run_capture(
      {(own_directory() / "switchboard").string(), "workers", "--json", "-c", config_path()}, 10s);
  if (!out) return std::nullopt;
  const auto parsed = nlohmann::json::parse(*out, nullptr, false);
  if (!parsed.is_object() || !parsed.contains("workers") || !parsed["workers"].is_array())
    return std::nullopt;
  return parsed["workers"];
}

std::vector<pid_t> SwitchboardProcess::worker_pids() const {
  std::vector<pid_t> pids;
  if (const auto rows = workers()) {
    for (const auto& row : *rows) pids.push_back(row.value("pid", 0));
  }
  return pids;
}

int SwitchboardProcess::worker_restarts() const {
  int restarts = 0;
  if (const auto rows = workers()) {
    for (const auto& row : *rows) restarts += row.value("restarts", 0);
  }
  return restarts;
}

void SwitchboardProcess::stop() {
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    if (!wait_until(pid_, Clock::now() + 10s)) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    pid_ = -1;
  }
  // Workers leave when their supervisor does; any straggler we saw is ended by its pid.
  const auto deadline = Clock::now() + 5s;
  for (pid_t worker : seen_workers_) {
    while (alive(worker) && Clock::now() < deadline) std::this_thread::sleep_for(10ms);
    if (alive(worker)) ::kill(worker, SIGKILL);
  }
  seen_workers_.clear();
}

std::string SwitchboardProcess::log_tail(std::size_t bytes) const {
  std::ifstream file(dir_.path() / "switchboard.log");
  std::stringstream text;
  text << file.rdbuf();
  const std::string all = text.str();
  return all.size() > bytes ? all.substr(all.size() - bytes) : all;
}

}  // namespace sbbench
