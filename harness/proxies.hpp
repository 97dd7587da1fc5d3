// Real proxies in front of what tests dial, each in the foreground on a free port of its
// own and stopped with the object: tinyproxy and squid as CONNECT proxies, stunnel4 making any
// proxy an https:// one, and HAProxy passing TCP from this machine's outward address (so
// that a dialer sees a host that is not loopback). Each constructor returns once its
// program accepts connections, and throws with the program's output when it does not.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "harness/process.hpp"
#include "harness/test_pki.hpp"

namespace harness {

// The first of `candidates` that is an executable program, if any is installed.
std::optional<fs::path> find_program(std::initializer_list<const char*> candidates);

// Starts `argv` (its output in `log`) and returns once `address`:`port` accepts a
// connection; throws with the output, the process stopped, when it does not in `within`.
pid_t start_listening(const std::vector<std::string>& argv, const fs::path& log,
                      const std::string& address, int port, const std::string& what,
                      std::chrono::milliseconds within = std::chrono::seconds(10));

class TinyProxy {
 public:
  // The tinyproxy program when one is installed.
  static std::optional<fs::path> find();
  // Allowed to CONNECT only to `connect_port`, asking for `credentials` (user:password)
  // when given; its log names each CONNECT.
  TinyProxy(const fs::path& program, int connect_port, const std::string& credentials = "");
  ~TinyProxy();
  TinyProxy(const TinyProxy&) = delete;
  TinyProxy& operator=(const TinyProxy&) = delete;

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string log() const;

 private:
  TempDir dir_{"sb-tinyproxy"};
  int port_ = free_port();
  pid_t pid_ = -1;
};

// squid as a CONNECT proxy to `connect_port` only, asking for Basic `credentials`
// (user:password) and answering wrong ones 407, as most corporate proxies do.
class Squid {
 public:
  static std::optional<fs::path> find();
  Squid(const fs::path& program, int connect_port, const std::string& credentials);
  ~Squid();
  Squid(const Squid&) = delete;
  Squid& operator=(const Squid&) = delete;

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // Its access log: one line per CONNECT, with its status.
  std::string log() const;

 private:
  TempDir dir_{"sb-squid"};
  int port_ = free_port();
  pid_t pid_ = -1;
};

// stunnel4 terminating TLS with `pki`'s server certificate (it names localhost) in front
// of a plain proxy on `proxy_port`: an https:// proxy.
class StunnelFront {
 public:
  static std::optional<fs::path> find();
  StunnelFront(const fs::path& program, const TestPki& pki, int proxy_port);
  ~StunnelFront();
  StunnelFront(const StunnelFront&) = delete;
  StunnelFront& operator=(const StunnelFront&) = delete;

  std::string url() const { return "https://localhost:" + std::to_string(port_); }

 private:
  TempDir dir_{"sb-stunnel"};
  int port_ = free_port();
  pid_t pid_ = -1;
};

// The first IPv4 address of this machine that is not loopback, if it has one.
std::optional<std::string> outward_address();

// HAProxy passing TCP from `address`:port() to 127.0.0.1:`port`.
class TcpForward {
 public:
  TcpForward(const fs::path& haproxy, const std::string& address, int port);
  ~TcpForward();
  TcpForward(const TcpForward&) = delete;
  TcpForward& operator=(const TcpForward&) = delete;

  int port() const { return port_; }

 private:
  TempDir dir_{"sb-forward"};
  int port_ = free_port();
  pid_t pid_ = -1;
};

}  // namespace harness
