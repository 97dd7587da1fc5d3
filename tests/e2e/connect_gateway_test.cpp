// End to end: switchboard-connect attaches through a TLS-inspecting gateway that adds the
// secret on the way (docs/connect.md, "The secret added by a gateway"). The switchboard
// sits behind a TLS front (HAProxy with a test certificate); the gateway is mitmproxy
// (Debian's mitmdump) in its regular proxy mode, re-signing the front's certificate with its
// own authority, which connect trusts with --ca-file, and adding the Authorization header
// to the upgrade with a small addon. Connect itself holds no secret. mitmproxy and haproxy
// are required under SWITCHBOARD_REQUIRE_GATEWAY (CI), where skipping would hide the tests.
#include <fstream>

#include "harness/haproxy_front.hpp"
#include "harness/proxies.hpp"
#include "harness/test_pki.hpp"
#include "tests/e2e/connect_process.hpp"
#include "tests/e2e/e2e_helpers.hpp"

namespace sbtest {
namespace {

// mitmdump as a regular proxy: it opens TLS to the front (trusting the test authority
// only), re-signs toward connect with its own authority, and adds "Authorization: Bearer"
// with what `secret_file` holds (read at each request) to every request for /vm/attach.
class Gateway {
 public:
  Gateway(const fs::path& program, const fs::path& upstream_authority,
          const fs::path& secret_file) {
    const fs::path addon = dir_.path() / "add_secret.py";
    std::ofstream(addon) << "from pathlib import Path\n"
                         << "SECRET = Path(" << json(secret_file.string()).dump() << ")\n"
                         << "def request(flow):\n"
                         << "    if flow.request.path.startswith('/vm/attach'):\n"
                         << "        secret = SECRET.read_text().strip()\n"
                         << "        flow.request.headers['Authorization'] = 'Bearer ' + secret\n"
                         << "        print('added the secret to', flow.request.path, flush=True)\n";
    pid_ = harness::start_listening(
        {program.string(), "--listen-host", "127.0.0.1", "--listen-port", std::to_string(port_),
         "--set", "confdir=" + dir_.path().string(), "--set",
         "ssl_verify_upstream_trusted_ca=" + upstream_authority.string(), "-s", addon.string()},
        log_, "127.0.0.1", port_, "mitmdump", std::chrono::seconds(30));
    if (!eventually([&] { return fs::exists(authority()); }))
      throw std::runtime_error("mitmdump wrote no authority: " + read_file(log_));
  }
  ~Gateway() { stop_process(pid_, std::chrono::seconds(5)); }
  Gateway(const Gateway&) = delete;
  Gateway& operator=(const Gateway&) = delete;

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // The authority it re-signs with, for connect's --ca-file.
  fs::path authority() const { return dir_.path() / "mitmproxy-ca-cert.pem"; }
  std::string log() const { return read_file(log_); }

 private:
  TempDir dir_{"sb-gateway"};
  fs::path log_ = dir_.path() / "mitmdump.log";
  int port_ = free_port();
  pid_t pid_ = -1;
};

class ConnectThroughGateway : public AlphaTest {
 protected:
  TestTimings timings_{"dial_backoff=100,dial_unauthorized=300,server_grace=2000"};

  void SetUp() override {
    mitmdump_ = harness::find_program({"/usr/bin/mitmdump"});
    haproxy_ = harness::HaproxyFront::find();
    if (mitmdump_ && haproxy_) return;
    if (std::getenv("SWITCHBOARD_REQUIRE_GATEWAY"))
      FAIL() << "mitmproxy or haproxy is not installed (Debian: mitmproxy, haproxy) and "
                "SWITCHBOARD_REQUIRE_GATEWAY is set";
    GTEST_SKIP() << "mitmproxy or haproxy is not installed (Debian: mitmproxy, haproxy)";
  }

  std::optional<fs::path> mitmdump_;
  std::optional<fs::path> haproxy_;
};

TEST_F(ConnectThroughGateway, TheGatewayAddsTheSecretAndCallsReachTheServer) {
  SwitchboardProcess sb(config());
  const harness::TestPki pki = harness::make_test_pki(sb.dir(), "DNS:localhost");
  harness::HaproxyTlsFront front(*haproxy_, pki, sb.port());
  const fs::path gateway_secret = sb.dir() / "gateway.secret";
  std::ofstream(gateway_secret) << "not-the-secret\n";
  Gateway gateway(*mitmdump_, pki.ca_certificate, gateway_secret);

  ConnectProcess connector(
      {(bin_dir() / "switchboard-connect").string(), "--url", front.attach_url(), "--name", "alpha",
       "--proxy", gateway.url(), "--ca-file", gateway.authority().string(), "--gateway-adds-secret",
       "--", (bin_dir() / "fake_stdio_server").string()},
      sb.dir() / "connect.log");
  // A secret the switchboard does not know, added by the gateway: refused, and said so.
  ASSERT_TRUE(connector.wait_log("the gateway added no secret it accepts"))
      << connector.log() << gateway.log();
  // The gateway reads its secret at each request: put right, the next dial attaches.
  std::ofstream(gateway_secret) << alpha_.secret << "\n";
  ASSERT_TRUE(wait_ready(sb, owner_.secret, "alpha")) << connector.log() << gateway.log();
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp/alpha", owner_.secret, "echo", json{{"g", 1}})),
            (json{{"g", 1}}));
  EXPECT_NE(gateway.log().find("added the secret to /vm/attach"), std::string::npos)
      << gateway.log();
  EXPECT_EQ(connector.log().find(alpha_.secret), std::string::npos);
}

// Without --ca-file, the gateway's re-signed certificate is refused: trusting it is an
// operator's choice, never a default.
TEST_F(ConnectThroughGateway, TheGatewaysAuthorityIsTrustedOnlyWhenGiven) {
  SwitchboardProcess sb(config());
  const harness::TestPki pki = harness::make_test_pki(sb.dir(), "DNS:localhost");
  harness::HaproxyTlsFront front(*haproxy_, pki, sb.port());
  const fs::path gateway_secret = sb.dir() / "gateway.secret";
  std::ofstream(gateway_secret) << alpha_.secret << "\n";
  Gateway gateway(*mitmdump_, pki.ca_certificate, gateway_secret);
  ConnectProcess connector(
      {(bin_dir() / "switchboard-connect").string(), "--url", front.attach_url(), "--name", "alpha",
       "--proxy", gateway.url(), "--gateway-adds-secret", "--",
       (bin_dir() / "fake_stdio_server").string()},
      sb.dir() / "connect.log");
  EXPECT_TRUE(connector.wait_log("TLS with localhost")) << connector.log();
  EXPECT_EQ(gateway.log().find("added the secret"), std::string::npos) << gateway.log();
}

}  // namespace
}  // namespace sbtest
