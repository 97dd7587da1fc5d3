#include "shared/service_notify.hpp"

#include <fcntl.h>
#include <poll.h>
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

void ServiceNotifier::store(std::string_view name, int fd) const {
  if (!has_store() || fd < 0) return;
  send("FDSTORE=1\nFDNAME=" + std::string(name), fd);
}

void ServiceNotifier::forget(std::string_view name) const {
  if (!has_store()) return;
  send("FDSTOREREMOVE=1\nFDNAME=" + std::string(name));
}

void ServiceNotifier::barrier(std::chrono::milliseconds timeout) const {
  if (socket_path_.empty()) return;
  int ends[2];
  if (::pipe2(ends, O_CLOEXEC) != 0) return;
  send("BARRIER=1", ends[1]);
  ::close(ends[1]);
  // The service manager closes its copy of the write end once it got here: then the read
  // end hangs up.
  pollfd hung_up{ends[0], 0, 0};
  ::poll(&hung_up, 1, static_cast<int>(timeout.count()));
  ::close(ends[0]);
}

void ServiceNotifier::send(std::string_view message, int fd) const {
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
  const int socket = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (socket < 0) return;
  iovec content{const_cast<char*>(message.data()), message.size()};
  msghdr header{};
  header.msg_name = &address;
  header.msg_namelen = length;
  header.msg_iov = &content;
  header.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (fd >= 0) {
    header.msg_control = control;
    header.msg_controllen = sizeof control;
    cmsghdr* rights = CMSG_FIRSTHDR(&header);
    rights->cmsg_level = SOL_SOCKET;
    rights->cmsg_type = SCM_RIGHTS;
    rights->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(rights), &fd, sizeof(int));
  }
  if (::sendmsg(socket, &header, MSG_NOSIGNAL) < 0) {
    log_warn("could not notify the service manager", {{"error", std::strerror(errno)}});
  }
  ::close(socket);
}

}  // namespace sb
