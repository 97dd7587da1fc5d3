// systemd's readiness protocol (sd_notify) without libsystemd: one datagram per state
// change to $NOTIFY_SOCKET. With no socket given, every call does nothing.
#pragma once

#include <string>
#include <string_view>

namespace sb {

class ServiceNotifier {
 public:
  // `socket_path` is $NOTIFY_SOCKET as given ("@name" is the abstract namespace).
  explicit ServiceNotifier(std::string socket_path) : socket_path_(std::move(socket_path)) {}
  void ready() const { send("READY=1"); }
  void reloading() const;
  void stopping() const { send("STOPPING=1"); }

 private:
  void send(std::string_view message) const;
  std::string socket_path_;
};

}  // namespace sb
