// nginx beside the relay, as a yardstick an operator knows: one nginx process (the origin)
// answers the small call's reply itself (`return 200`); another process reverse-proxies to
// it over keep-alive upstream connections (a hop between two processes, as each of the
// relay's is), and so does a second server block of the origin's own process (a hop that
// never leaves it). Against the origin, each is what one nginx proxy hop costs on this
// machine, measured in the same run as the relay (docs/benchmarks.md).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>

#include "harness/process.hpp"

namespace sbbench {

class NginxPeer {
 public:
  // The nginx program when one is installed (Debian's nginx-light puts it in /usr/sbin).
  static std::optional<std::filesystem::path> find();

  // Starts the two nginx processes (no master, no daemon; the origin answers any request with
  // `reply` as JSON) and returns once both answer. Throws with nginx's logs when they do not.
  NginxPeer(const std::filesystem::path& program, const std::string& reply);
  ~NginxPeer();
  NginxPeer(const NginxPeer&) = delete;
  NginxPeer& operator=(const NginxPeer&) = delete;

  int direct_port() const { return direct_port_; }  // the origin: answers itself
  int proxy_port() const { return proxy_port_; }    // one hop to the origin, from another process
  int inner_proxy_port() const { return inner_proxy_port_; }  // one hop inside the origin's

 private:
  void stop();

  harness::TempDir dir_{"sb-bench-nginx"};
  int direct_port_ = harness::free_port();
  int proxy_port_ = harness::free_port();
  int inner_proxy_port_ = harness::free_port();
  pid_t origin_pid_ = -1;
  pid_t proxy_pid_ = -1;
};

}  // namespace sbbench
