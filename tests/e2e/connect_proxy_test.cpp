// End to end: switchboard-connect dials the real switchboard through a real HTTP proxy,
// Debian's tinyproxy (docs/connect.md, "Through a proxy"): the WebSocket goes through
// CONNECT, with Basic credentials from a file when the proxy wants them, and a refusal
// (407, or tinyproxy's 401 for wrong credentials) is reported and dialled again with the
// usual backoff. tinyproxy is required under
// SWITCHBOARD_REQUIRE_TINYPROXY (CI), where skipping would hide the tests.
#include <fstream>
#include <regex>

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
                                          std::vector<std::string> extra = {}) const {
    const fs::path secret = sb.dir() / "alpha.secret";
    std::ofstream(secret) << alpha_.secret << "\n";
    std::vector<std::string> words{(bin_dir() / "switchboard-connect").string(),
                                   "--url",
                                   "ws://127.0.0.1:" + std::to_string(sb.port()) + "/vm/attach",
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

}  // namespace
}  // namespace sbtest
