#include "shared/service_notify.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <ctime>

#include "shared/log.hpp"

namespace sb {

void ServiceNotifier::reloading() const {
  // systemd 253+ wants the monotonic time of the reload with RELOADING=1.
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  const long long usec = static_cast<long long>(now.tv_sec) * 1'000'000 + now.tv_nsec / 1'000;
  send("RELOADING=1\nMONOTONIC_USEC=" + std::to_string(usec));
}

void ServiceNotifier::send(std::string_view message) const {
  if (socket_path_.empty()) return;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (socket_path_.size() >= sizeof address.sun_path) {
    log_warn("NOTIFY_SOCKET is too long; not notifying the service manager");
    return;
  }
  std::memcpy(address.sun_path, socket_path_.data(), socket_path_.size());
  if (address.sun_path[0] == '@') address.sun_path[0] = '\0';
  const socklen_t length =
      static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + socket_path_.size());
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  if (::sendto(fd, message.data(), message.size(), MSG_NOSIGNAL,
               reinterpret_cast<const sockaddr*>(&address), length) < 0) {
    log_warn("could not notify the service manager", {{"error", std::strerror(errno)}});
  }
  ::close(fd);
}

}  // namespace sb
