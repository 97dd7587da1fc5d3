#include "bench/process_hop.hpp"

#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>

namespace sbbench {
namespace {

bool write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t written = ::write(fd, data, size);
    if (written <= 0) return false;
    data += written;
    size -= static_cast<std::size_t>(written);
  }
  return true;
}

bool read_exactly(int fd, char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t got = ::read(fd, data, size);
    if (got <= 0) return false;
    data += got;
    size -= static_cast<std::size_t>(got);
  }
  return true;
}

// The child: echoes whatever arrives until its end of the pair closes. Only read, write
// and _exit, which are safe after fork() in a process that has threads.
[[noreturn]] void echo(int fd) {
  char buffer[4096];
  for (;;) {
    const ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got <= 0 || !write_all(fd, buffer, static_cast<std::size_t>(got))) ::_exit(0);
  }
}

}  // namespace

std::vector<std::int64_t> unix_round_trips(int count, std::size_t message_bytes) {
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) return {};
  const pid_t child = ::fork();
  if (child < 0) {
    ::close(pair[0]);
    ::close(pair[1]);
    return {};
  }
  if (child == 0) {
    ::close(pair[0]);
    echo(pair[1]);
  }
  ::close(pair[1]);
  std::string message(message_bytes, 'x');
  std::string reply(message_bytes, '\0');
  std::vector<std::int64_t> samples;
  samples.reserve(static_cast<std::size_t>(count));
  const int warmup = count / 10;
  for (int round = 0; round < warmup + count; ++round) {
    const auto started = std::chrono::steady_clock::now();
    if (!write_all(pair[0], message.data(), message.size()) ||
        !read_exactly(pair[0], reply.data(), reply.size())) {
      samples.clear();
      break;
    }
    const auto took = std::chrono::steady_clock::now() - started;
    if (round >= warmup) {
      samples.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(took).count());
    }
  }
  ::close(pair[0]);
  ::waitpid(child, nullptr, 0);
  return samples;
}

}  // namespace sbbench
