#include "harness/raw_socket.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>

#include "harness/wait.hpp"

namespace harness {
namespace {

// Milliseconds left until `deadline`, for poll().
int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::max<std::chrono::milliseconds::rep>(0, left.count()));
}

bool wait_for(int fd, short events, Clock::time_point deadline) {
  pollfd entry{fd, events, 0};
  return ::poll(&entry, 1, remaining_ms(deadline)) > 0;
}

}  // namespace

RawSocket::RawSocket(int port, std::optional<int> receive_buffer) {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw std::runtime_error("socket() failed");
  if (receive_buffer) {
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &*receive_buffer, sizeof(int));
  }
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    ::close(fd_);
    throw std::runtime_error("connect() failed");
  }
}

RawSocket::~RawSocket() {
  if (fd_ >= 0) ::close(fd_);
}

bool RawSocket::send_all(std::string_view bytes, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (!bytes.empty()) {
    if (!wait_for(fd_, POLLOUT, deadline)) return false;
    const auto sent = ::send(fd_, bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (sent < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return false;
    }
    bytes.remove_prefix(static_cast<std::size_t>(sent));
  }
  return true;
}

bool RawSocket::send_until_refused(std::string_view bytes, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (!wait_for(fd_, POLLOUT, deadline)) continue;
    const auto sent = ::send(fd_, bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (sent < 0 && errno != EAGAIN && errno != EINTR) return true;
  }
  return false;
}

void RawSocket::shutdown_write() {
  ::shutdown(fd_, SHUT_WR);
}

bool RawSocket::read_until(std::string_view needle, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  char chunk[16 * 1024];
  while (read_.find(needle) == std::string::npos) {
    if (!wait_for(fd_, POLLIN, deadline)) return false;
    const auto read = ::recv(fd_, chunk, sizeof(chunk), 0);
    if (read <= 0) return false;
    read_.append(chunk, static_cast<std::size_t>(read));
  }
  return true;
}

std::string RawSocket::read_to_end(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  std::string out = std::move(read_);
  read_.clear();
  char chunk[16 * 1024];
  while (wait_for(fd_, POLLIN, deadline)) {
    const auto read = ::recv(fd_, chunk, sizeof(chunk), 0);
    if (read <= 0) break;
    out.append(chunk, static_cast<std::size_t>(read));
  }
  return out;
}

bool RawSocket::closed_by_peer(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  char chunk[16 * 1024];
  while (wait_for(fd_, POLLIN, deadline)) {
    const auto read = ::recv(fd_, chunk, sizeof(chunk), 0);
    if (read <= 0) return true;
  }
  return false;
}

std::string RawSocket::take_read() {
  std::string out = std::move(read_);
  read_.clear();
  return out;
}

std::optional<int> final_status(std::string_view bytes) {
  for (;;) {
    if (!bytes.starts_with("HTTP/1.1 ") || bytes.size() < 12) return std::nullopt;
    const int status = std::stoi(std::string(bytes.substr(9, 3)));
    if (status >= 200) return status;
    const auto end = bytes.find("\r\n\r\n");
    if (end == std::string_view::npos) return std::nullopt;
    bytes.remove_prefix(end + 4);
  }
}

}  // namespace harness
