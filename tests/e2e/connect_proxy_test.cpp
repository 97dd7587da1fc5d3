// End to end: switchboard-connect dials the real switchboard through a real HTTP proxy,
// Debian's tinyproxy (docs/connect.md, "Through a proxy"): the WebSocket goes through
// CONNECT, with Basic credentials from a file when the proxy wants them, and a refusal
// (407, or tinyproxy's 401 for wrong credentials) is reported and dialled again with the
// usual backoff; squid answers a wrong password 407, as corporate proxies do. As an
// https:// proxy, tinyproxy sits behind stunnel4 (TLS to the proxy), and a wss://
// switchboard behind an HAProxy TLS front makes TLS run inside TLS. tinyproxy, squid,
// stunnel4 and haproxy are required under SWITCHBOARD_REQUIRE_TINYPROXY (CI), where
// skipping would hide the tests.
#include <fstream>
#include <regex>

#include "harness/haproxy_front.hpp"
#include "harness/proxies.hpp"
#include "tests/e2e/connect_process.hpp"
#include "tests/e2e/e2e_helpers.hpp"

namespace sbtest {
namespace {

class ConnectThroughProxy : public AlphaTest {
 protected:
  TestTimings timings_{"dial_backoff=100,server_grace=2000"};

  void SetUp() override {
    program_ = harness::TinyProxy::find();
    if (program_) return;
    if (std::getenv("SWITCHBOARD_REQUIRE_TINYPROXY"))
      FAIL() << "tinyproxy is not installed (Debian: tinyproxy) and "
                "SWITCHBOARD_REQUIRE_TINYPROXY is set";
    GTEST_SKIP() << "tinyproxy is not installed (Debian: tinyproxy)";
  }

  std::unique_ptr<ConnectProcess> connect(const SwitchboardProcess& sb,
                                          const harness::TinyProxy& proxy,
                                          std::vector<std::string> extra = {}) const {
    return connect(sb, proxy.url(), std::move(extra));
  }

  std::unique_ptr<ConnectProcess> connect(const SwitchboardProcess& sb,
                                          const std::string& proxy_url,
                                          std::vector<std::string> extra = {},
                                          std::string url = "") const {
    if (url.empty()) url = "ws://127.0.0.1:" + std::to_string(sb.port()) + "/vm/attach";
    extra.insert(extra.begin(), {"--proxy", proxy_url});
    return start_connect(sb, url, std::move(extra), "connect.log");
  }

  // No --proxy: the environment's, as the process was started with it.
  std::unique_ptr<ConnectProcess> connect_by_environment(const SwitchboardProcess& sb,
                                                         const std::string& url,
                                                         const std::string& log) const {
    return start_connect(sb, url, {"--allow-insecure-transport"}, log);
  }

  // switchboard-connect as alpha, dialling `url` with `options`, serving the fake server.
  std::unique_ptr<ConnectProcess> start_connect(const SwitchboardProcess& sb,
                                                const std::string& url,
                                                std::vector<std::string> options,
                                                const std::string& log) const {
    const fs::path secret = sb.dir() / "alpha.secret";
    std::ofstream(secret) << alpha_.secret << "\n";
    std::vector<std::string> words{(bin_dir() / "switchboard-connect").string(),
                                   "--url",
                                   url,
                                   "--secret-file",
                                   secret.string(),
                                   "--name",
                                   "alpha"};
    words.insert(words.end(), options.begin(), options.end());
    words.push_back("--");
    words.push_back((bin_dir() / "fake_stdio_server").string());
    return std::make_unique<ConnectProcess>(words, sb.dir() / log);
  }

  std::optional<fs::path> program_;
};

TEST_F(ConnectThroughProxy, TheAttachGoesThroughConnectAndCallsReachTheServer) {
  SwitchboardProcess sb(config());
  harness::TinyProxy proxy(*program_, sb.port());
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
  harness::TinyProxy proxy(*program_, sb.port(), "agent:s3cret");
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
  harness::TinyProxy proxy(*program_, sb.port(), "agent:s3cret");
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
  const auto address = harness::outward_address();
  const auto haproxy = harness::HaproxyFront::find();
  if (!address || !haproxy) GTEST_SKIP() << "needs an address that is not loopback, and haproxy";
  SwitchboardProcess sb(config());
  harness::TcpForward forward(*haproxy, *address, sb.port());
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

// squid, as most corporate networks run it: a wrong password is a 407, the right one (read
// again before the next dial) opens the tunnel, and the switchboard, behind a TLS front,
// is reached over wss:// end to end inside it.
TEST_F(ConnectThroughProxy, SquidAnswersAWrongPassword407AndTheRightOneReachesAWssSwitchboard) {
  const auto squid = harness::Squid::find();
  const auto haproxy = harness::HaproxyFront::find();
  if (!squid || !haproxy) {
    if (std::getenv("SWITCHBOARD_REQUIRE_TINYPROXY"))
      FAIL() << "squid or haproxy is not installed and SWITCHBOARD_REQUIRE_TINYPROXY is set";
    GTEST_SKIP() << "squid or haproxy is not installed (Debian: squid, haproxy)";
  }
  SwitchboardProcess sb(config());
  const harness::TestPki pki = harness::make_test_pki(sb.dir(), "DNS:localhost");
  harness::HaproxyTlsFront front(*haproxy, pki, sb.port());
  harness::Squid proxy(*squid, front.port(), "agent:s3cret");
  const fs::path credentials = sb.dir() / "proxy.credentials";
  std::ofstream(credentials) << "agent:wrong\n";
  const auto connector = connect(
      sb, proxy.url(),
      {"--proxy-credentials-file", credentials.string(), "--ca-file", pki.ca_certificate.string()},
      front.attach_url());
  ASSERT_TRUE(connector->wait_log("the proxy refused its credentials (407)")) << connector->log();
  std::ofstream(credentials) << "agent:s3cret\n";
  ASSERT_TRUE(wait_ready(sb, owner_.secret, "alpha")) << connector->log() << proxy.log();
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp/alpha", owner_.secret, "echo", json{{"sq", 1}})),
            (json{{"sq", 1}}));
  EXPECT_NE(proxy.log().find("CONNECT localhost:" + std::to_string(front.port())),
            std::string::npos)
      << proxy.log();
}

class ConnectThroughHttpsProxy : public ConnectThroughProxy {
 protected:
  void SetUp() override {
    ConnectThroughProxy::SetUp();
    if (IsSkipped() || HasFailure()) return;
    stunnel_ = harness::StunnelFront::find();
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
  harness::TinyProxy proxy(*program_, sb.port(), "agent:s3cret");
  harness::StunnelFront front(*stunnel_, pki, proxy.port());
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
  harness::TinyProxy proxy(*program_, switchboard_front.port());
  harness::StunnelFront front(*stunnel_, pki, proxy.port());
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
  harness::TinyProxy proxy(*program_, sb.port());
  harness::StunnelFront front(*stunnel_, pki, proxy.port());
  const auto connector = connect(sb, front.url());
  EXPECT_TRUE(connector->wait_log("TLS with the proxy localhost:")) << connector->log();
  EXPECT_EQ(proxy.log().find("127.0.0.1:" + std::to_string(sb.port())), std::string::npos)
      << proxy.log();
}

}  // namespace
}  // namespace sbtest
