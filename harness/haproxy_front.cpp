#include "harness/haproxy_front.hpp"

#include <unistd.h>

#include <fstream>
#include <regex>
#include <stdexcept>

#include "harness/http_client.hpp"
#include "harness/proxies.hpp"
#include "harness/wait.hpp"

namespace harness {
namespace {

// Replaces the one line that matches `line` (the whole line) with `replacement`.
std::string replace_line(const std::string& text, const std::string& line,
                         const std::string& replacement) {
  const std::regex pattern("^[ \\t]*" + line + "[^\\n]*$", std::regex::multiline);
  const auto matches = std::distance(std::sregex_iterator(text.begin(), text.end(), pattern),
                                     std::sregex_iterator());
  if (matches != 1)
    throw std::runtime_error("the twins config has " + std::to_string(matches) +
                             " lines starting `" + line + "`; one was expected");
  return std::regex_replace(text, pattern, replacement);
}

std::string loopback(int port) {
  return "127.0.0.1:" + std::to_string(port);
}

}  // namespace

std::string twins_config(const std::string& shipped, int front_port, int port_one, int port_two) {
  std::string config = replace_line(shipped, "bind ", "    bind " + loopback(front_port));
  config = replace_line(config, "server one ", "    server one " + loopback(port_one));
  return replace_line(config, "server two ", "    server two " + loopback(port_two));
}

std::optional<fs::path> HaproxyFront::find() {
  for (const char* where : {"/usr/sbin/haproxy", "/usr/local/sbin/haproxy", "/usr/bin/haproxy"}) {
    if (::access(where, X_OK) == 0) return fs::path(where);
  }
  return std::nullopt;
}

HaproxyFront::HaproxyFront(const fs::path& program, const fs::path& config, int port_one,
                           int port_two) {
  const fs::path written = dir_.path() / "haproxy.cfg";
  std::ofstream(written) << twins_config(read_file(config), port_, port_one, port_two);
  // -db: in the foreground, its log (to stderr, as the example says) in our file.
  pid_ = start_process({program.string(), "-db", "-f", written.string()}, dir_.path() / "out.log",
                       dir_.path() / "out.log");
  const bool listening = eventually(
      [&] {
        try {
          http_get(port_, "/readyz");
          return true;
        } catch (const std::exception&) {
          return false;
        }
      },
      std::chrono::seconds(10));
  if (!listening) {
    stop_process(pid_, std::chrono::seconds(2));
    pid_ = -1;
    throw std::runtime_error("haproxy did not start: " + log());
  }
}

HaproxyFront::~HaproxyFront() {
  if (pid_ > 0) stop_process(pid_, std::chrono::seconds(2));
}

std::string HaproxyFront::log() const {
  return read_file(dir_.path() / "out.log");
}

HaproxyTlsFront::HaproxyTlsFront(const fs::path& program, const TestPki& pki, int backend_port) {
  const fs::path pem = dir_.path() / "front.pem";
  std::ofstream(pem) << read_file(pki.server_certificate) << read_file(pki.server_key);
  const fs::path config = dir_.path() / "front.cfg";
  std::ofstream(config) << "defaults\n  mode http\n  timeout connect 5s\n"
                        << "  timeout client 60s\n  timeout server 60s\n  timeout tunnel 1h\n"
                        << "frontend front\n  bind " << loopback(port_) << " ssl crt "
                        << pem.string() << "\n  default_backend switchboard\n"
                        << "backend switchboard\n  server one " << loopback(backend_port) << "\n";
  pid_ = start_listening({program.string(), "-db", "-f", config.string()}, dir_.path() / "out.log",
                         "127.0.0.1", port_, "haproxy");
}

HaproxyTlsFront::~HaproxyTlsFront() {
  if (pid_ > 0) stop_process(pid_, std::chrono::seconds(2));
}

std::string HaproxyTlsFront::attach_url() const {
  return "wss://localhost:" + std::to_string(port_) + "/vm/attach";
}

}  // namespace harness
