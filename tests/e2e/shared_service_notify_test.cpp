// The systemd readiness protocol, end to end: `switchboard serve` with NOTIFY_SOCKET set
// says READY=1 only once it answers /healthz, RELOADING=1 then READY=1 around a SIGHUP,
// and STOPPING=1 at SIGTERM.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "harness/notify_socket.hpp"
#include "harness/process.hpp"

extern char** environ;

namespace {

using namespace std::chrono_literals;
using harness::NotifySocket;

std::string temp_dir() {
  char pattern[] = "/tmp/switchboard-notify-XXXXXX";
  return ::mkdtemp(pattern);
}

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  socklen_t length = sizeof address;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  ::close(fd);
  return ntohs(address.sin_port);
}

bool healthz_answers(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = false;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0) {
    const std::string request = "GET /healthz HTTP/1.0\r\n\r\n";
    if (::write(fd, request.data(), request.size()) == static_cast<long>(request.size())) {
      char buffer[256] = {};
      const long got = ::read(fd, buffer, sizeof buffer - 1);
      ok = got > 0 && std::strstr(buffer, " 200 ") != nullptr;
    }
  }
  ::close(fd);
  return ok;
}

// A one-computer config listening on `port`, everything it writes inside `dir`.
std::string write_config(const std::string& dir, int port) {
  std::ofstream(dir + "/sb.toml") << "listen = \"127.0.0.1:" << port << "\"\n"
                                  << "control_socket = \"" << dir << "/control.sock\"\n"
                                  << "audit_path = \"" << dir << "/audit.jsonl\"\n"
                                  << "[[computer]]\nname = \"one\"\nsecret_sha256 = \"sha256:"
                                  << std::string(64, 'a') << "\"\n"
                                  << "[[client]]\nname = \"c\"\ntoken_sha256 = \"sha256:"
                                  << std::string(64, 'b') << "\"\ncomputers = { one = [\"*\"] }\n";
  return dir + "/sb.toml";
}

// Starts `switchboard serve -c config` with exactly `environment`.
pid_t spawn_serve(const std::string& config, std::vector<std::string> environment) {
  std::vector<char*> envp;
  for (auto& entry : environment) envp.push_back(entry.data());
  envp.push_back(nullptr);
  const std::string binary = (harness::bin_dir() / "switchboard").string();
  std::vector<char*> argv{const_cast<char*>(binary.c_str()), const_cast<char*>("serve"),
                          const_cast<char*>("-c"), const_cast<char*>(config.c_str()), nullptr};
  pid_t pid = 0;
  EXPECT_EQ(::posix_spawn(&pid, binary.c_str(), nullptr, nullptr, argv.data(), envp.data()), 0);
  return pid;
}

TEST(ServiceNotify, ReadyReloadingStopping) {
  const std::string dir = temp_dir();
  const int port = free_port();
  const std::string config = write_config(dir, port);
  NotifySocket notify(dir + "/notify.sock");
  std::vector<std::string> environment;
  for (char** entry = environ; *entry; ++entry) environment.emplace_back(*entry);
  environment.push_back("NOTIFY_SOCKET=" + dir + "/notify.sock");
  const pid_t pid = spawn_serve(config, environment);
  ASSERT_GT(pid, 0);

  const auto ready = notify.next(15s);
  ASSERT_EQ(ready, "READY=1");
  EXPECT_TRUE(healthz_answers(port)) << "READY=1 came before the listener answered";

  ::kill(pid, SIGHUP);
  const auto reloading = notify.next(10s);
  ASSERT_TRUE(reloading);
  EXPECT_EQ(reloading->rfind("RELOADING=1\nMONOTONIC_USEC=", 0), 0u) << *reloading;
  EXPECT_EQ(notify.next(10s), "READY=1");

  ::kill(pid, SIGTERM);
  EXPECT_EQ(notify.next(10s), "STOPPING=1");
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(ServiceNotify, ServeRunsWhenNobodyListensOnTheNotifySocket) {
  // Every other end-to-end test runs serve without NOTIFY_SOCKET. Here it points nowhere:
  // a notification that cannot be delivered must not stop the service.
  const std::string dir = temp_dir();
  const int port = free_port();
  const pid_t pid =
      spawn_serve(write_config(dir, port), {"NOTIFY_SOCKET=" + dir + "/nobody-listens.sock"});
  ASSERT_GT(pid, 0);
  bool up = false;
  for (const auto deadline = std::chrono::steady_clock::now() + 15s;
       !up && std::chrono::steady_clock::now() < deadline;) {
    up = healthz_answers(port);
    if (!up) ::usleep(20'000);
  }
  EXPECT_TRUE(up);
  ::kill(pid, SIGTERM);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
