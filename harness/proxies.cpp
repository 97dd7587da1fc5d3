#include "harness/proxies.hpp"

#include <arpa/inet.h>
#include <crypt.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <initializer_list>
#include <stdexcept>

#include "harness/wait.hpp"

namespace harness {
namespace {

bool accepts(const std::string& address, int port) {
  sockaddr_in to{.sin_family = AF_INET, .sin_port = htons(static_cast<std::uint16_t>(port))};
  if (::inet_pton(AF_INET, address.c_str(), &to.sin_addr) != 1) return false;
  const int socket = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (socket < 0) return false;
  const bool connected = ::connect(socket, reinterpret_cast<const sockaddr*>(&to), sizeof to) == 0;
  ::close(socket);
  return connected;
}

}  // namespace

std::optional<fs::path> find_program(std::initializer_list<const char*> candidates) {
  for (const char* candidate : candidates) {
    if (::access(candidate, X_OK) == 0) return fs::path(candidate);
  }
  return std::nullopt;
}

pid_t start_listening(const std::vector<std::string>& argv, const fs::path& log,
                      const std::string& address, int port, const std::string& what,
                      std::chrono::milliseconds within) {
  const pid_t pid = start_process(argv, log, log);
  if (!eventually([&] { return accepts(address, port); }, within)) {
    stop_process(pid, std::chrono::seconds(2));
    throw std::runtime_error(what + " did not start: " + read_file(log));
  }
  return pid;
}

std::optional<fs::path> TinyProxy::find() {
  return find_program({"/usr/bin/tinyproxy", "/usr/sbin/tinyproxy"});
}

TinyProxy::TinyProxy(const fs::path& program, int connect_port, const std::string& credentials) {
  const fs::path config = dir_.path() / "tinyproxy.conf";
  std::ofstream out(config);
  out << "Port " << port_ << "\nListen 127.0.0.1\nTimeout 30\nLogLevel Connect\n"
      << "MaxClients 16\nConnectPort " << connect_port << "\n";
  if (!credentials.empty()) {
    const auto colon = credentials.find(':');
    out << "BasicAuth " << credentials.substr(0, colon) << " " << credentials.substr(colon + 1)
        << "\n";
  }
  out.close();
  pid_ = start_listening({program.string(), "-d", "-c", config.string()},
                         dir_.path() / "tinyproxy.log", "127.0.0.1", port_, "tinyproxy");
}

TinyProxy::~TinyProxy() {
  stop_process(pid_, std::chrono::seconds(5));
}

std::string TinyProxy::log() const {
  return read_file(dir_.path() / "tinyproxy.log");
}

std::optional<fs::path> Squid::find() {
  return find_program({"/usr/sbin/squid"});
}

Squid::Squid(const fs::path& program, int connect_port, const std::string& credentials) {
  // Run as root, squid drops to its own user, which must reach its logs and password file.
  fs::permissions(dir_.path(), fs::perms::all);
  const auto colon = credentials.find(':');
  const char* hashed = ::crypt(credentials.substr(colon + 1).c_str(), "$1$sbtest$");
  if (!hashed || hashed[0] != '$') throw std::runtime_error("crypt() cannot make an MD5 hash");
  const fs::path passwd = dir_.path() / "passwd";
  std::ofstream(passwd) << credentials.substr(0, colon) << ":" << hashed << "\n";
  fs::permissions(passwd, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                              fs::perms::others_read);
  const fs::path config = dir_.path() / "squid.conf";
  const std::string dir = dir_.path().string();
  std::ofstream(config) << "http_port 127.0.0.1:" << port_ << "\npid_filename none\n"
                        << "cache deny all\npinger_enable off\nlogfile_rotate 0\n"
                        << "shutdown_lifetime 0 seconds\ncoredump_dir " << dir << "\n"
                        << "cache_log stdio:" << dir << "/cache.log\n"
                        << "access_log stdio:" << dir << "/access.log\n"
                        << "auth_param basic program /usr/lib/squid/basic_ncsa_auth " << dir
                        << "/passwd\nauth_param basic realm switchboard-test\n"
                        << "acl authenticated proxy_auth REQUIRED\n"
                        << "acl target port " << connect_port << "\n"
                        << "http_access deny !target\n"
                        << "http_access allow CONNECT authenticated\nhttp_access deny all\n";
  pid_ = start_listening({program.string(), "-N", "-f", config.string()}, dir_.path() / "out.log",
                         "127.0.0.1", port_, "squid");
}

Squid::~Squid() {
  stop_process(pid_, std::chrono::seconds(5));
}

std::string Squid::log() const {
  return read_file(dir_.path() / "access.log");
}

std::optional<fs::path> StunnelFront::find() {
  return find_program({"/usr/bin/stunnel4", "/usr/bin/stunnel"});
}

StunnelFront::StunnelFront(const fs::path& program, const TestPki& pki, int proxy_port) {
  const fs::path config = dir_.path() / "stunnel.conf";
  std::ofstream(config) << "foreground = yes\npid =\n[proxy]\naccept = 127.0.0.1:" << port_
                        << "\nconnect = 127.0.0.1:" << proxy_port
                        << "\ncert = " << pki.server_certificate.string()
                        << "\nkey = " << pki.server_key.string() << "\n";
  pid_ = start_listening({program.string(), config.string()}, dir_.path() / "stunnel.log",
                         "127.0.0.1", port_, "stunnel");
}

StunnelFront::~StunnelFront() {
  stop_process(pid_, std::chrono::seconds(5));
}

std::optional<std::string> outward_address() {
  ifaddrs* addresses = nullptr;
  if (::getifaddrs(&addresses) != 0) return std::nullopt;
  std::optional<std::string> found;
  for (const ifaddrs* entry = addresses; entry && !found; entry = entry->ifa_next) {
    if (!entry->ifa_addr || entry->ifa_addr->sa_family != AF_INET) continue;
    const auto* address = reinterpret_cast<const sockaddr_in*>(entry->ifa_addr);
    if ((ntohl(address->sin_addr.s_addr) >> 24) == 127) continue;
    char text[INET_ADDRSTRLEN] = {};
    if (::inet_ntop(AF_INET, &address->sin_addr, text, sizeof text)) found = text;
  }
  ::freeifaddrs(addresses);
  return found;
}

TcpForward::TcpForward(const fs::path& haproxy, const std::string& address, int port) {
  const fs::path config = dir_.path() / "forward.cfg";
  std::ofstream(config) << "defaults\n  mode tcp\n  timeout connect 5s\n"
                        << "  timeout client 60s\n  timeout server 60s\n"
                        << "frontend in\n  bind " << address << ":" << port_
                        << "\n  default_backend out\nbackend out\n  server target 127.0.0.1:"
                        << port << "\n";
  pid_ = start_listening({haproxy.string(), "-db", "-f", config.string()},
                         dir_.path() / "haproxy.log", address, port_, "haproxy");
}

TcpForward::~TcpForward() {
  stop_process(pid_, std::chrono::seconds(5));
}

}  // namespace harness
