// End to end: switchboard-connect dials the real switchboard through a real HTTP proxy,
// Debian's tinyproxy (docs/connect.md, "Through a proxy"): the WebSocket goes through
// CONNECT, with Basic credentials from a file when the proxy wants them, and a refusal
// (407, or tinyproxy's 401 for wrong credentials) is reported and dialled again with the
// usual backoff. As an https:// proxy, tinyproxy sits behind stunnel4 (TLS to the proxy),
// and a wss:// switchboard behind an HAProxy TLS front makes TLS run inside TLS.
// tinyproxy, stunnel4 and haproxy are required under SWITCHBOARD_REQUIRE_TINYPROXY (CI),
// where skipping would hide the tests.
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <regex>

#include "harness/haproxy_front.hpp"
#include "harness/raw_socket.hpp"
#include "harness/test_pki.hpp"
#include "tests/e2e/connect_process.hpp"
#include "tests/e2e/e2e_helpers.hpp"

namespace sbtest {
namespace {

// tinyproxy in the foreground on a free port, allowed to CONNECT only to `port`, asking
// for `user`:`password` when they are given; its log names each CONNECT.
class TinyProxy {
 public:
  static std::optional<fs::path> find() {
    for (const char* candidate : {"/usr/bin/tinyproxy", "/usr/sbin/tinyproxy"}) {
      if (fs::exists(candidate)) return fs::path(candidate);
    }
    return std::nullopt;
  }

  TinyProxy(const fs::path& program, int port, const std::string& credentials = "") {
    const fs::path config = dir_.path() / "tinyproxy.conf";
    std::ofstream out(config);
    out << "Port " << port_ << "\nListen 127.0.0.1\nTimeout 30\nLogLevel Connect\n"
        << "MaxClients 16\nConnectPort " << port << "\n";
    if (!credentials.empty()) {
      const auto colon = credentials.find(':');
      out << "BasicAuth " << credentials.substr(0, colon) << " " << credentials.substr(colon + 1)
          << "\n";
    }
    out.close();
    pid_ = start_process({program.string(), "-d", "-c", config.string()}, log_, log_);
    if (!eventually([&] { return port_open(port_); }))
      throw std::runtime_error("tinyproxy did not start: " + read_file(log_));
  }
  ~TinyProxy() { stop_process(pid_, std::chrono::seconds(5)); }
  TinyProxy(const TinyProxy&) = delete;
  TinyProxy& operator=(const TinyProxy&) = delete;

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string log() const { return read_file(log_); }

 private:
  static bool port_open(int port) {
    try {
      return http_get(port, "/").status > 0;
    } catch (const std::exception&) {
      return false;
    }
  }

  TempDir dir_{"sb-tinyproxy"};
  fs::path log_ = dir_.path() / "tinyproxy.log";
  int port_ = free_port();
  pid_t pid_ = -1;
};

// stunnel4 in the foreground, terminating TLS with `pki`'s server certificate (it names
// localhost) in front of a plain proxy on `proxy_port`: an https:// proxy.
class TlsProxyFront {
 public:
  static std::optional<fs::path> find() {
    for (const char* candidate : {"/usr/bin/stunnel4", "/usr/bin/stunnel"}) {
      if (fs::exists(candidate)) return fs::path(candidate);
    }
    return std::nullopt;
  }

  TlsProxyFront(const fs::path& program, const harness::TestPki& pki, int proxy_port) {
    const fs::path config = dir_.path() / "stunnel.conf";
    std::ofstream(config) << "foreground = yes\npid =\n[proxy]\naccept = 127.0.0.1:" << port_
                          << "\nconnect = 127.0.0.1:" << proxy_port
                          << "\ncert = " << pki.server_certificate.string()
                          << "\nkey = " << pki.server_key.string() << "\n";
    pid_ = start_process({program.string(), config.string()}, log_, log_);
    if (!eventually([&] {
          try {
            RawSocket socket(port_);
            return true;
          } catch (const std::exception&) {
            return false;
          }
        }))
      throw std::runtime_error("stunnel did not start: " + read_file(log_));
  }
  ~TlsProxyFront() { stop_process(pid_, std::chrono::seconds(5)); }
  TlsProxyFront(const TlsProxyFront&) = delete;
  TlsProxyFront& operator=(const TlsProxyFront&) = delete;

  std::string url() const { return "https://localhost:" + std::to_string(port_); }

 private:
  TempDir dir_{"sb-stunnel"};
  fs::path log_ = dir_.path() / "stunnel.log";
  int port_ = free_port();
  pid_t pid_ = -1;
};

// The first IPv4 address of this machine that is not loopback, if it has one: a
// switchboard reached at it is one the environment's proxy applies to.
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

// HAProxy passing TCP from `address`:port() to 127.0.0.1:`port`: the switchboard, reached
// at an address that is not loopback.
class TcpForward {
 public:
  TcpForward(const fs::path& program, const std::string& address, int port) {
    const fs::path config = dir_.path() / "forward.cfg";
    std::ofstream(config) << "defaults\n  mode tcp\n  timeout connect 5s\n"
                          << "  timeout client 60s\n  timeout server 60s\n"
                          << "frontend in\n  bind " << address << ":" << port_
                          << "\n  default_backend out\nbackend out\n  server switchboard "
                          << "127.0.0.1:" << port << "\n";
    pid_ = start_process({program.string(), "-db", "-f", config.string()}, log_, log_);
    if (!eventually([&] { return fs::exists(log_) && listening(address); }))
      throw std::runtime_error("haproxy did not start: " + read_file(log_));
  }
  ~TcpForward() { stop_process(pid_, std::chrono::seconds(5)); }
  TcpForward(const TcpForward&) = delete;
  TcpForward& operator=(const TcpForward&) = delete;

  int port() const { return port_; }

 private:
  bool listening(const std::string& address) const {
    sockaddr_in to{.sin_family = AF_INET, .sin_port = htons(static_cast<std::uint16_t>(port_))};
    if (::inet_pton(AF_INET, address.c_str(), &to.sin_addr) != 1) return false;
    const int socket = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const bool connected =
        ::connect(socket, reinterpret_cast<const sockaddr*>(&to), sizeof to) == 0;
    ::close(socket);
    return connected;
  }
  TempDir dir_{"sb-forward"};
  fs::path log_ = dir_.path() / "haproxy.log";
  int port_ = free_port();
  pid_t pid_ = -1;
};

class ConnectThroughProxy : public AlphaTest {
 protected:
  TestTimings timings_{"dial_backoff=100,server_grace=2000"};

  void SetUp() override {
    program_ = TinyProxy::find();
    if (program_) return;
    if (std::getenv("SWITCHBOARD_REQUIRE_TINYPROXY"))
      FAIL() << "tinyproxy is not installed (Debian: tinyproxy) and "
                "SWITCHBOARD_REQUIRE_TINYPROXY is set";
    GTEST_SKIP() << "tinyproxy is not installed (Debian: tinyproxy)";
  }

  std::unique_ptr<ConnectProcess> connect(const SwitchboardProcess& sb, const TinyProxy& proxy,
                                          std::vector<std::string> extra = {}) const {
    return connect(sb, proxy.url(), std::move(extra));
  }

  std::unique_ptr<ConnectProcess> connect(const SwitchboardProcess& sb,
                                          const std::string& proxy_url,
                                          std::vector<std::string> extra = {},
                                          std::string url = "") const {
    const fs::path secret = sb.dir() / "alpha.secret";
    std::ofstream(secret) << alpha_.secret << "\n";
    if (url.empty()) url = "ws://127.0.0.1:" + std::to_string(sb.port()) + "/vm/attach";
    std::vector<std::string> words{(bin_dir() / "switchboard-connect").string(),
                                   "--url",
                                   url,
                                   "--secret-file",
                                   secret.string(),
                                   "--name",
                                   "alpha",
                                   "--proxy",
                                   proxy_url};
    words.insert(words.end(), extra.begin(), extra.end());
    words.push_back("--");
    words.push_back((bin_dir() / "fake_stdio_server").string());
    return std::make_unique<ConnectProcess>(words, sb.dir() / "connect.log");
  }

  // No --proxy: the environment's, as the process was started with it.
  std::unique_ptr<ConnectProcess> connect_by_environment(const SwitchboardProcess& sb,
                                                         const std::string& url,
                                                         const std::string& log) const {
    const fs::path secret = sb.dir() / "alpha.secret";
    std::ofstream(secret) << alpha_.secret << "\n";
    return std::make_unique<ConnectProcess>(
        std::vector<std::string>{(bin_dir() / "switchboard-connect").string(), "--url", url,
                                 "--secret-file", secret.string(), "--name", "alpha",
                                 "--allow-insecure-transport", "--",
                                 (bin_dir() / "fake_stdio_server").string()},
        sb.dir() / log);
  }

  std::optional<fs::path> program_;
};

TEST_F(ConnectThroughProxy, TheAttachGoesThroughConnectAndCallsReachTheServer) {
  SwitchboardProcess sb(config());
  TinyProxy proxy(*program_, sb.port());
  const auto connector = connect(sb, proxy);
  ASSERT_TRUE(wait_ready(sb, owner_.secret, "alpha")) << connector->log() << proxy.log();
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp/alpha", owner_.secret, "echo", json{{"p", 1}})),
            (json{{"p", 1}}));
  EXPECT_NE(proxy.log().find("127.0.0.1:" + std::to_string(sb.port())), std::string::npos)
      << "the proxy carried the attach: " << proxy.log();
  EXPECT_NE(connector->log().find("proxy=" + proxy.url()), std::string::npos) << connector->log();
}

TEST_F(ConnectThroughProxy, CredentialsFromAFileOpenTheTunnelAndWrongOnesAreRefused) {
  SwitchboardProcess sb(config());
  TinyProxy proxy(*program_, sb.port(), "agent:s3cret");
  const fs::path credentials = sb.dir() / "proxy.credentials";
  std::ofstream(credentials) << "agent:wrong\n";
  const auto connector = connect(sb, proxy, {"--proxy-credentials-file", credentials.string()});
  ASSERT_TRUE(connector->wait_log("the proxy refused its credentials")) << connector->log();
  EXPECT_EQ(connector->log().find("wrong"), std::string::npos) << "credentials are never logged";
  // The file is read again before each dial: put right, the next dial attaches.
  std::ofstream(credentials) << "agent:s3cret\n";
  ASSERT_TRUE(wait_ready(sb, owner_.secret, "alpha")) << connector->log() << proxy.log();
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp/alpha", owner_.secret, "echo", json{{"q", 2}})),
            (json{{"q", 2}}));
}

TEST_F(ConnectThroughProxy, AProxyThatWantsCredentialsSaysSoWhenNoneAreGiven) {
  SwitchboardProcess sb(config());
  TinyProxy proxy(*program_, sb.port(), "agent:s3cret");
  const auto connector = connect(sb, proxy);
  EXPECT_TRUE(connector->wait_log("the proxy asks for credentials (407)")) << connector->log();
}

// The proxy is down: each dial fails at once, and the next waits longer (the backoff the
// log names), not a loop of dials.
TEST_F(ConnectThroughProxy, ADeadProxyIsDialledAgainAfterAGrowingWait) {
  SwitchboardProcess sb(config());
  const auto connector = connect(sb, "http://127.0.0.1:" + std::to_string(free_port()));
  const std::regex failed(
      "dial failed: connecting to 127\\.0\\.0\\.1:[0-9]+: .* retry_in=([0-9.]+) s");
  std::vector<double> waits;
  ASSERT_TRUE(eventually([&] {
    waits.clear();
    const std::string log = connector->log();
    for (auto it = std::sregex_iterator(log.begin(), log.end(), failed);
         it != std::sregex_iterator(); ++it)
      waits.push_back(std::stod((*it)[1]));
    return waits.size() >= 4;
  })) << connector->log();
  EXPECT_GT(waits[3], waits[0]) << connector->log();
}

// The environment's proxy applies to a switchboard that is not on loopback, unless
// NO_PROXY names it: then the dial goes straight there.
TEST_F(ConnectThroughProxy, NoProxyNamingTheSwitchboardDialsItDirectly) {
  const auto address = outward_address();
  const auto haproxy = harness::HaproxyFront::find();
  if (!address || !haproxy) GTEST_SKIP() << "needs an address that is not loopback, and haproxy";
  SwitchboardProcess sb(config());
  TcpForward forward(*haproxy, *address, sb.port());
  const std::string url = "ws://" + *address + ":" + std::to_string(forward.port()) + "/vm/attach";
  const int dead = free_port();
  ScopedEnv proxy("http_proxy", "http://127.0.0.1:" + std::to_string(dead));
  const auto through = connect_by_environment(sb, url, "through.log");
  EXPECT_TRUE(through->wait_log("connecting to 127.0.0.1:" + std::to_string(dead)))
      << "the environment's proxy, for a switchboard not on loopback: " << through->log();
  EXPECT_FALSE(computer_ready(sb, owner_.secret, "alpha"));

  ScopedEnv bypass("NO_PROXY", "localhost," + *address);
  const auto direct = connect_by_environment(sb, url, "direct.log");
  ASSERT_TRUE(wait_ready(sb, owner_.secret, "alpha")) << direct->log();
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp/alpha", owner_.secret, "echo", json{{"n", 3}})),
            (json{{"n", 3}}));
  EXPECT_EQ(direct->log().find("proxy="), std::string::npos) << direct->log();
}

class ConnectThroughHttpsProxy : public ConnectThroughProxy {
 protected:
  void SetUp() override {
    ConnectThroughProxy::SetUp();
    if (IsSkipped() || HasFailure()) return;
    stunnel_ = TlsProxyFront::find();
    haproxy_ = harness::HaproxyFront::find();
    if (stunnel_ && haproxy_) return;
    if (std::getenv("SWITCHBOARD_REQUIRE_TINYPROXY"))
      FAIL() << "stunnel4 or haproxy is not installed and SWITCHBOARD_REQUIRE_TINYPROXY is set";
    GTEST_SKIP() << "stunnel4 or haproxy is not installed (Debian: stunnel4, haproxy)";
  }

  std::optional<fs::path> stunnel_;
  std::optional<fs::path> haproxy_;
};

// TLS to the proxy, verified against --ca-file's authority, and the tunnel inside it.
TEST_F(ConnectThroughHttpsProxy, TheTunnelRunsInsideTlsToTheProxy) {
  SwitchboardProcess sb(config());
  const harness::TestPki pki = harness::make_test_pki(sb.dir(), "DNS:localhost");
  TinyProxy proxy(*program_, sb.port(), "agent:s3cret");
  TlsProxyFront front(*stunnel_, pki, proxy.port());
  const fs::path credentials = sb.dir() / "proxy.credentials";
  std::ofstream(credentials) << "agent:s3cret\n";
  const auto connector = connect(
      sb, front.url(),
      {"--proxy-credentials-file", credentials.string(), "--ca-file", pki.ca_certificate.string()});
  ASSERT_TRUE(wait_ready(sb, owner_.secret, "alpha")) << connector->log() << proxy.log();
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp/alpha", owner_.secret, "echo", json{{"s", 1}})),
            (json{{"s", 1}}));
  EXPECT_NE(proxy.log().find("127.0.0.1:" + std::to_string(sb.port())), std::string::npos)
      << "the proxy behind the TLS carried the attach: " << proxy.log();
}

// A wss:// switchboard through an https:// proxy: TLS to the switchboard, end to end,
// inside TLS to the proxy.
TEST_F(ConnectThroughHttpsProxy, WssRunsEndToEndInsideTlsToTheProxy) {
  SwitchboardProcess sb(config());
  const harness::TestPki pki = harness::make_test_pki(sb.dir(), "DNS:localhost");
  harness::HaproxyTlsFront switchboard_front(*haproxy_, pki, sb.port());
  TinyProxy proxy(*program_, switchboard_front.port());
  TlsProxyFront front(*stunnel_, pki, proxy.port());
  const auto connector = connect(sb, front.url(), {"--ca-file", pki.ca_certificate.string()},
                                 switchboard_front.attach_url());
  ASSERT_TRUE(wait_ready(sb, owner_.secret, "alpha")) << connector->log() << proxy.log();
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp/alpha", owner_.secret, "echo", json{{"w", 2}})),
            (json{{"w", 2}}));
  EXPECT_NE(proxy.log().find("localhost:" + std::to_string(switchboard_front.port())),
            std::string::npos)
      << proxy.log();
}

// The proxy's certificate is checked like the switchboard's: an authority nobody trusts
// fails the dial, said with the proxy's name, and nothing goes through it.
TEST_F(ConnectThroughHttpsProxy, AProxysCertificateIsCheckedLikeTheSwitchboards) {
  SwitchboardProcess sb(config());
  const harness::TestPki pki = harness::make_test_pki(sb.dir(), "DNS:localhost");
  TinyProxy proxy(*program_, sb.port());
  TlsProxyFront front(*stunnel_, pki, proxy.port());
  const auto connector = connect(sb, front.url());
  EXPECT_TRUE(connector->wait_log("TLS with the proxy localhost:")) << connector->log();
  EXPECT_EQ(proxy.log().find("127.0.0.1:" + std::to_string(sb.port())), std::string::npos)
      << proxy.log();
}

}  // namespace
}  // namespace sbtest
