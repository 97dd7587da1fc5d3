#include "harness/notify_socket.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace harness {

NotifySocket::NotifySocket(std::filesystem::path path)
    : path_(std::move(path)), socket_(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string where = path_.string();
  if (!socket_.valid() || where.size() >= sizeof address.sun_path)
    throw std::runtime_error("cannot make a notify socket at " + where);
  std::memcpy(address.sun_path, where.c_str(), where.size() + 1);
  if (::bind(socket_.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0)
    throw std::runtime_error("cannot bind " + where + ": " + std::strerror(errno));
}

std::optional<std::string> NotifySocket::next(std::chrono::milliseconds within) const {
  pollfd readable{socket_.get(), POLLIN, 0};
  if (::poll(&readable, 1, static_cast<int>(within.count())) <= 0) return std::nullopt;
  char datagram[4096];
  const auto got = ::recv(socket_.get(), datagram, sizeof datagram, 0);
  if (got <= 0) return std::nullopt;
  return std::string(datagram, static_cast<std::size_t>(got));
}

}  // namespace harness
