// Which proxy a switchboard is dialled through and what is said to it
// (shared/http_proxy.hpp): --proxy or the environment as curl reads it, NO_PROXY's forms,
// loopback never through the environment's proxy, credentials never on the command line,
// and the proxy's answer to CONNECT read for what it says.
#include "shared/http_proxy.hpp"

#include <gtest/gtest.h>

namespace sb {
namespace {

DialTarget target(const std::string& url) {
  return std::get<DialTarget>(parse_dial_target(url));
}

std::optional<ProxyRoute> route(const std::string& url, const std::string& configured,
                                const ProxyEnvironment& environment) {
  auto chosen = route_for(target(url), configured, environment, {});
  EXPECT_TRUE(std::holds_alternative<std::optional<ProxyRoute>>(chosen))
      << std::get<std::string>(chosen);
  return std::holds_alternative<std::optional<ProxyRoute>>(chosen)
             ? std::get<std::optional<ProxyRoute>>(chosen)
             : std::nullopt;
}

std::string refusal(const std::string& url, const std::string& configured,
                    const ProxyEnvironment& environment) {
  auto chosen = route_for(target(url), configured, environment, {});
  return std::holds_alternative<std::string>(chosen) ? std::get<std::string>(chosen) : "";
}

TEST(Proxy, EachSchemeTakesItsOwnVariableAndAllProxyOtherwise) {
  const ProxyEnvironment environment{.https_proxy = "http://secure:3128",
                                     .http_proxy = "http://plain:8080",
                                     .all_proxy = "http://any:1"};
  EXPECT_EQ(route("wss://sb.example/vm/attach", "", environment)->proxy.host, "secure");
  EXPECT_EQ(route("ws://sb.example/vm/attach", "", environment)->proxy.host, "plain");
  const ProxyEnvironment only_all{.all_proxy = "http://any"};
  const auto any = route("wss://sb.example/vm/attach", "", only_all);
  ASSERT_TRUE(any);
  EXPECT_EQ(any->proxy.port, "1080") << "curl's default proxy port";
  EXPECT_FALSE(route("wss://sb.example/vm/attach", "", ProxyEnvironment{}));
}

TEST(Proxy, AnHttpsProxyIsDialledWithTlsOnItsOwnPortOr443) {
  const auto secure = route("ws://127.0.0.1:8080/vm/attach", "https://p.example:8443", {});
  ASSERT_TRUE(secure);
  EXPECT_TRUE(secure->proxy.tls);
  EXPECT_EQ(secure->proxy.host, "p.example") << "the name its certificate must carry";
  EXPECT_EQ(secure->proxy.port, "8443");
  const auto bare = route("wss://sb.example/vm/attach", "", {.https_proxy = "https://p.example"});
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->proxy.port, "443") << "curl's default for an https:// proxy";
  EXPECT_FALSE(route("wss://sb.example/vm/attach", "http://p.example", {})->proxy.tls);
}

TEST(Proxy, NoProxyNamesHostsDomainsAddressesRangesAndPorts) {
  const auto names = [](const std::string& list, const std::string& url) {
    return no_proxy_names(list, target(url));
  };
  EXPECT_TRUE(names("*", "wss://anything/x"));
  EXPECT_TRUE(names("example.com", "wss://sb.example.com/x"));
  EXPECT_TRUE(names(".example.com", "wss://sb.example.com/x"));
  EXPECT_TRUE(names("example.com", "wss://example.com/x"));
  EXPECT_FALSE(names("example.com", "wss://badexample.com/x")) << "a label boundary";
  EXPECT_TRUE(names("other, Example.COM ", "wss://sb.example.com/x"));
  EXPECT_TRUE(names("10.1.2.3", "wss://10.1.2.3/x"));
  EXPECT_TRUE(names("10.0.0.0/8", "wss://10.1.2.3/x"));
  EXPECT_FALSE(names("10.0.0.0/16", "wss://10.1.2.3/x"));
  EXPECT_TRUE(names("fd00::/8", "wss://[fd00::5]/x"));
  EXPECT_TRUE(names("sb.example.com:443", "wss://sb.example.com/x"));
  EXPECT_FALSE(names("sb.example.com:8443", "wss://sb.example.com/x"));
  EXPECT_FALSE(names("", "wss://sb.example.com/x"));
  const ProxyEnvironment environment{.https_proxy = "http://p:3128", .no_proxy = "example.com"};
  EXPECT_FALSE(route("wss://sb.example.com/vm/attach", "", environment));
  EXPECT_TRUE(route("wss://sb.example.org/vm/attach", "", environment));
}

TEST(Proxy, LoopbackNeverGoesThroughTheEnvironmentsProxyButThroughAConfiguredOne) {
  const ProxyEnvironment environment{.http_proxy = "http://p:3128"};
  EXPECT_FALSE(route("ws://127.0.0.1:8080/vm/attach", "", environment));
  EXPECT_TRUE(route("ws://127.0.0.1:8080/vm/attach", "http://127.0.0.1:3128", environment));
}

TEST(Proxy, CredentialsComeFromTheEnvironmentsUrlNeverFromTheCommandLine) {
  const ProxyEnvironment environment{.https_proxy = "http://agent:p%40ss@p:3128"};
  const auto from_environment = route("wss://sb.example/vm/attach", "", environment);
  ASSERT_TRUE(from_environment);
  EXPECT_EQ(from_environment->credentials, "agent:p@ss");
  EXPECT_EQ(from_environment->url, "http://p:3128") << "what is logged has no user info";
  EXPECT_NE(
      refusal("wss://sb.example/vm/attach", "http://agent:pw@p:3128", {}).find("credentials file"),
      std::string::npos);
  const std::string bad =
      refusal("wss://sb.example/vm/attach", "", {.https_proxy = "socks5://agent:hunter2@p"});
  EXPECT_FALSE(bad.empty());
  EXPECT_EQ(bad.find("hunter2"), std::string::npos) << "a password is never repeated";
}

TEST(Proxy, TheConnectRequestNamesTheSwitchboardAndTheCredentials) {
  EXPECT_EQ(connect_request(target("wss://sb.example/vm/attach"), ""),
            "CONNECT sb.example:443 HTTP/1.1\r\nHost: sb.example:443\r\n\r\n");
  EXPECT_EQ(connect_request(target("ws://[::1]:8080/vm/attach"), basic_authorization("a:b")),
            "CONNECT [::1]:8080 HTTP/1.1\r\nHost: [::1]:8080\r\n"
            "Proxy-Authorization: Basic YTpi\r\n\r\n");
}

TEST(Proxy, TheProxysAnswerOpensTheTunnelOrSaysWhyNot) {
  EXPECT_EQ(tunnel_refusal("HTTP/1.1 200 Connection established\r\n\r\n", false), "");
  EXPECT_EQ(tunnel_refusal("HTTP/1.0 200 OK\r\nProxy-Agent: x\r\n\r\n", false), "");
  EXPECT_NE(tunnel_refusal("HTTP/1.1 407 Proxy Authentication Required\r\n\r\n", false)
                .find("asks for credentials"),
            std::string::npos);
  EXPECT_NE(tunnel_refusal("HTTP/1.1 407 Proxy Authentication Required\r\n\r\n", true)
                .find("refused its credentials (407)"),
            std::string::npos);
  EXPECT_EQ(tunnel_refusal("HTTP/1.1 403 Forbidden\r\n\r\n", false),
            "the proxy refused the tunnel: 403 Forbidden");
  EXPECT_EQ(tunnel_refusal("SSH-2.0-OpenSSH\r\n\r\n", false),
            "the proxy's answer to CONNECT is not HTTP");
  EXPECT_EQ(tunnel_refusal("HTTP/1.1 502 Bad\x1b[31m gateway\r\n\r\n", false),
            "the proxy refused the tunnel: 502 Bad?[31m gateway")
      << "the proxy's words reach a log line as printable ASCII only";
}

}  // namespace
}  // namespace sb
