#include "harness/service_manager.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace harness {
namespace {

// Where the stored descriptors wait, copied, for the child to place them: above anything
// the child's descriptors 3, 4, ... could be.
constexpr int kCopiesFrom = 10'000;

std::map<std::string, std::string> fields_of(const std::string& message) {
  std::map<std::string, std::string> fields;
  std::istringstream lines(message);
  std::string line;
  while (std::getline(lines, line)) {
    const auto equals = line.find('=');
    if (equals != std::string::npos) fields[line.substr(0, equals)] = line.substr(equals + 1);
  }
  return fields;
}

}  // namespace

FakeServiceManager::FakeServiceManager(const std::filesystem::path& dir)
    : socket_path_(dir / "notify.sock"), socket_(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) {
  // The service's workers outlive its main process when it crashes: they are waited for
  // here, as systemd waits for the unit's control group.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string where = socket_path_.string();
  if (!socket_.valid() || where.size() >= sizeof address.sun_path)
    throw std::runtime_error("cannot make a notify socket at " + where);
  std::memcpy(address.sun_path, where.c_str(), where.size() + 1);
  const int on = 1;
  ::setsockopt(socket_.get(), SOL_SOCKET, SO_PASSCRED, &on, sizeof on);
  if (::bind(socket_.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0)
    throw std::runtime_error("cannot bind " + where + ": " + std::strerror(errno));
  int ends[2];
  if (::pipe2(ends, O_CLOEXEC) != 0) throw std::runtime_error("pipe2");
  woken_ = sb::base::UniqueFd(ends[0]);
  wake_ = sb::base::UniqueFd(ends[1]);
  notifications_ = std::thread([this] { serve_notifications(); });
}

FakeServiceManager::~FakeServiceManager() {
  if (main_pid_ > 0) stop();
  wake_.reset();
  notifications_.join();
}

void FakeServiceManager::serve_notifications() {
  for (;;) {
    pollfd ready[2] = {{socket_.get(), POLLIN, 0}, {woken_.get(), POLLIN, 0}};
    if (::poll(ready, 2, -1) < 0 && errno != EINTR) return;
    if (ready[1].revents != 0) return;
    if (!(ready[0].revents & POLLIN)) continue;
    char data[4096];
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred)) + CMSG_SPACE(sizeof(int) * 16)];
    iovec content{data, sizeof data};
    msghdr header{};
    header.msg_iov = &content;
    header.msg_iovlen = 1;
    header.msg_control = control;
    header.msg_controllen = sizeof control;
    const auto got = ::recvmsg(socket_.get(), &header, MSG_CMSG_CLOEXEC);
    if (got < 0) continue;
    pid_t sender = 0;
    std::vector<sb::base::UniqueFd> fds;
    for (cmsghdr* part = CMSG_FIRSTHDR(&header); part; part = CMSG_NXTHDR(&header, part)) {
      if (part->cmsg_level != SOL_SOCKET) continue;
      if (part->cmsg_type == SCM_CREDENTIALS) {
        ucred credentials{};
        std::memcpy(&credentials, CMSG_DATA(part), sizeof credentials);
        sender = credentials.pid;
      } else if (part->cmsg_type == SCM_RIGHTS) {
        const std::size_t count = (part->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (std::size_t i = 0; i < count; ++i) {
          int fd;
          std::memcpy(&fd, CMSG_DATA(part) + i * sizeof(int), sizeof fd);
          fds.emplace_back(fd);
        }
      }
    }
    handle(std::string(data, static_cast<std::size_t>(got)), sender, std::move(fds));
  }
}

// A barrier's descriptor closes here, with everything else not stored: every message
// before it was handled by now.
void FakeServiceManager::handle(const std::string& message, pid_t sender,
                                std::vector<sb::base::UniqueFd> fds) {
  const auto fields = fields_of(message);
  if (fields.contains("READY")) ++readies_;
  // NotifyAccess=main: only the main process may store.
  if (sender != main_pid_) return;
  const auto name = fields.contains("FDNAME") ? fields.at("FDNAME") : std::string("stored");
  std::lock_guard lock(mutex_);
  if (fields.contains("FDSTOREREMOVE")) {
    std::erase_if(store_, [&](const Entry& entry) { return entry.name == name; });
  }
  if (!fields.contains("FDSTORE")) return;
  for (auto& fd : fds) {
    if (store_.size() >= unit_.store_max) break;
    store_.push_back(Entry{name, std::move(fd)});
  }
}

std::vector<std::string> FakeServiceManager::stored() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> names;
  for (const auto& entry : store_) names.push_back(entry.name);
  return names;
}

pid_t FakeServiceManager::start(const Unit& unit) {
  unit_ = unit;
  std::vector<sb::base::UniqueFd> copies;
  std::string names;
  {
    std::lock_guard lock(mutex_);
    for (const auto& entry : store_) {
      copies.emplace_back(::fcntl(entry.fd.get(), F_DUPFD_CLOEXEC, kCopiesFrom));
      names += (names.empty() ? "" : ":") + entry.name;
    }
  }
  const sb::base::UniqueFd out(
      ::open(unit.stdout_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  const sb::base::UniqueFd err(
      ::open(unit.stderr_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out.get(), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err.get(), STDERR_FILENO);
  for (std::size_t i = 0; i < copies.size(); ++i)
    posix_spawn_file_actions_adddup2(&actions, copies[i].get(), 3 + static_cast<int>(i));
  posix_spawn_file_actions_addclosefrom_np(&actions, 3 + static_cast<int>(copies.size()));
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t all;
  sigfillset(&all);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attributes, &all);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setpgroup(&attributes, 0);
  posix_spawnattr_setflags(&attributes,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  // LISTEN_PID must name the service's own process, known only once it runs: the shell
  // it starts as sets it to its own pid and becomes the service.
  std::vector<std::string> args{
      "/bin/sh", "-c",
      copies.empty() ? "exec \"$0\" \"$@\"" : "export LISTEN_PID=$$; exec \"$0\" \"$@\""};
  args.insert(args.end(), unit.argv.begin(), unit.argv.end());
  std::vector<std::string> environment;
  for (char** entry = environ; *entry; ++entry) {
    const std::string_view variable(*entry);
    if (!variable.starts_with("LISTEN_") && !variable.starts_with("NOTIFY_SOCKET=") &&
        !variable.starts_with("FDSTORE="))
      environment.emplace_back(variable);
  }
  environment.push_back("NOTIFY_SOCKET=" + socket_path_.string());
  environment.push_back("FDSTORE=" + std::to_string(unit.store_max));
  if (!copies.empty()) {
    environment.push_back("LISTEN_FDS=" + std::to_string(copies.size()));
    environment.push_back("LISTEN_FDNAMES=" + names);
  }
  std::vector<char*> argv;
  for (auto& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (auto& variable : environment) envp.push_back(variable.data());
  envp.push_back(nullptr);
  pid_t pid = -1;
  readies_ = 0;
  const int failed =
      ::posix_spawn(&pid, "/bin/sh", &actions, &attributes, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (failed != 0) throw std::runtime_error(std::string("posix_spawn: ") + std::strerror(failed));
  main_pid_ = pid;
  return pid;
}

void FakeServiceManager::wait_until_empty(std::chrono::milliseconds grace) {
  const pid_t group = main_pid_;
  const auto deadline = std::chrono::steady_clock::now() + grace;
  bool killed = false;
  for (;;) {
    int status = 0;
    const pid_t ended = ::waitpid(-group, &status, WNOHANG);
    if (ended == group) last_exit_ = status;
    if (ended < 0 && errno == ECHILD) break;
    if (ended > 0) continue;
    if (!killed && std::chrono::steady_clock::now() > deadline) {
      ::kill(-group, SIGKILL);  // as systemd does past TimeoutStopSec=
      killed = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  main_pid_ = -1;
}

pid_t FakeServiceManager::restart() {
  ::kill(main_pid_, unit_.restart_signal);
  wait_until_empty(std::chrono::seconds(30));
  return start(unit_);
}

pid_t FakeServiceManager::crash(int signal, const std::function<void()>& meanwhile) {
  ::kill(main_pid_, signal);
  wait_until_empty(std::chrono::seconds(30));
  if (meanwhile) meanwhile();
  return start(unit_);
}

bool FakeServiceManager::overwrite_stored(const std::string& name, const std::string& bytes) {
  std::lock_guard lock(mutex_);
  for (const auto& entry : store_) {
    if (entry.name != name) continue;
    return ::pwrite(entry.fd.get(), bytes.data(), bytes.size(), 0) ==
           static_cast<ssize_t>(bytes.size());
  }
  return false;
}

void FakeServiceManager::stop(std::chrono::milliseconds grace) {
  if (main_pid_ > 0) {
    ::kill(main_pid_, SIGTERM);
    wait_until_empty(grace);
  }
  std::lock_guard lock(mutex_);
  store_.clear();
}

}  // namespace harness
