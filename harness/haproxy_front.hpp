// HAProxy in front of two switchboards, run from the project's own example config
// (packaging/haproxy/switchboard-twins.cfg, docs/twins.md) with only its addresses
// changed: what the twins tests and the bench put callers through.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>

#include "harness/process.hpp"

namespace harness {

class HaproxyFront {
 public:
  // The haproxy program when one is installed (Debian's package puts it in /usr/sbin).
  static std::optional<fs::path> find();

  // Starts haproxy on `config` (the shipped file) listening on a free port of its own,
  // its servers `one` and `two` at 127.0.0.1:`port_one` and :`port_two`, and returns once
  // the front accepts connections. Throws with haproxy's output when it does not.
  HaproxyFront(const fs::path& program, const fs::path& config, int port_one, int port_two);
  ~HaproxyFront();
  HaproxyFront(const HaproxyFront&) = delete;
  HaproxyFront& operator=(const HaproxyFront&) = delete;

  int port() const { return port_; }
  // What haproxy has logged (one line per request, and its health checks' changes).
  std::string log() const;

 private:
  TempDir dir_{"sb-haproxy"};
  int port_ = free_port();
  pid_t pid_ = -1;
};

// The shipped config with its `bind` and its two `server` lines pointed at these ports.
// Throws when the file does not have exactly one of each, as the example does.
std::string twins_config(const std::string& shipped, int front_port, int port_one, int port_two);

}  // namespace harness
