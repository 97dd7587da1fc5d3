// HAProxy in front of switchboards: of two, run from the project's own example config
// (packaging/haproxy/switchboard-twins.cfg, docs/twins.md) with only its addresses
// changed, what the twins tests and the bench put callers through; and of one, terminating
// TLS with a test certificate, what wss:// tests dial.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>

#include "harness/process.hpp"
#include "harness/test_pki.hpp"

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

// HAProxy terminating TLS with `pki`'s server certificate in front of one switchboard on
// 127.0.0.1:`backend_port`, WebSocket upgrades passed through.
class HaproxyTlsFront {
 public:
  HaproxyTlsFront(const fs::path& program, const TestPki& pki, int backend_port);
  ~HaproxyTlsFront();
  HaproxyTlsFront(const HaproxyTlsFront&) = delete;
  HaproxyTlsFront& operator=(const HaproxyTlsFront&) = delete;

  int port() const { return port_; }
  // wss://localhost:PORT/vm/attach: the name the test certificate carries.
  std::string attach_url() const;

 private:
  TempDir dir_{"sb-haproxy-tls"};
  int port_ = free_port();
  pid_t pid_ = -1;
};

// The shipped config with its `bind` and its two `server` lines pointed at these ports.
// Throws when the file does not have exactly one of each, as the example does.
std::string twins_config(const std::string& shipped, int front_port, int port_one, int port_two);

}  // namespace harness
