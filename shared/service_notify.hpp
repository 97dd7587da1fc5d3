// systemd's notify protocol (sd_notify(3)) without libsystemd: one datagram per message to
// $NOTIFY_SOCKET. Readiness, and the service's file descriptor store: descriptors kept by
// the service manager under a name while the service restarts or after it crashes, handed
// back as LISTEN_FDS (docs/architecture.md, "Switching"). With no socket given, every
// call does nothing; with no store (`store_size` 0), the store calls do nothing.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

namespace sb {

class ServiceNotifier {
 public:
  // `socket_path` is $NOTIFY_SOCKET as given ("@name" is the abstract namespace);
  // `store_size` is $FDSTORE, what the unit's FileDescriptorStoreMax= allows.
  explicit ServiceNotifier(std::string socket_path, std::size_t store_size = 0)
      : socket_path_(std::move(socket_path)), store_size_(store_size) {}
  void ready() const { send("READY=1"); }
  void reloading() const;
  void stopping() const { send("STOPPING=1"); }
  // One line for `systemctl status` (no newline in it).
  void status(std::string_view text) const { send("STATUS=" + std::string(text)); }

  bool has_store() const { return !socket_path_.empty() && store_size_ > 0; }
  // Puts a copy of `fd` in the store under `name` (a descriptor name: printable, no colon).
  void store(std::string_view name, int fd) const;
  // Takes every descriptor stored under `name` out of the store.
  void forget(std::string_view name) const;
  // Waits, at most `timeout`, until the service manager has handled every message sent
  // before this one (BARRIER=1): what a process about to exit says must not be lost.
  void barrier(std::chrono::milliseconds timeout) const;

 private:
  void send(std::string_view message, int fd = -1) const;
  std::string socket_path_;
  std::size_t store_size_;
};

}  // namespace sb
