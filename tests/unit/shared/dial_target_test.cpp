// The one URL parser (shared/dial_target.hpp): what the config loader checks is what the
// pty dialer and the demo computer dial.
#include "shared/dial_target.hpp"

#include <gtest/gtest.h>

namespace sb {
namespace {

DialTarget parsed(std::string_view url) {
  auto result = parse_dial_target(url);
  if (auto* problem = std::get_if<std::string>(&result)) ADD_FAILURE() << *problem;
  return std::holds_alternative<DialTarget>(result) ? std::get<DialTarget>(result) : DialTarget{};
}

std::string refusal(std::string_view url) {
  auto result = parse_dial_target(url);
  return std::holds_alternative<std::string>(result) ? std::get<std::string>(result) : "";
}

TEST(DialTarget, SplitsHostPortAndTarget) {
  const DialTarget plain = parsed("ws://127.0.0.1:8080/tools/attach/laptop");
  EXPECT_FALSE(plain.tls);
  EXPECT_EQ(plain.host, "127.0.0.1");
  EXPECT_EQ(plain.port, "8080");
  EXPECT_EQ(plain.host_header, "127.0.0.1:8080");
  EXPECT_EQ(plain.target, "/tools/attach/laptop");
  EXPECT_TRUE(plain.loopback);

  const DialTarget tls = parsed("wss://kiro.example.ts.net/tools/attach/s?x=1");
  EXPECT_TRUE(tls.tls);
  EXPECT_EQ(tls.port, "443");
  EXPECT_EQ(tls.host_header, "kiro.example.ts.net");
  EXPECT_EQ(tls.target, "/tools/attach/s?x=1");
  EXPECT_FALSE(tls.loopback);

  const DialTarget v6 = parsed("ws://[::1]:9/a");
  EXPECT_EQ(v6.host, "::1");
  EXPECT_EQ(v6.host_header, "[::1]:9");
  EXPECT_TRUE(v6.loopback);

  const DialTarget bare = parsed("WS://LocalHost");
  EXPECT_EQ(bare.host, "localhost");
  EXPECT_EQ(bare.port, "80");
  EXPECT_EQ(bare.target, "/");
  EXPECT_TRUE(bare.loopback);
}

TEST(DialTarget, OneUrlWrittenTwoWaysIsOneTarget) {
  EXPECT_EQ(parsed("wss://Pod.Example/tools/attach/a"), parsed("WSS://pod.example/tools/attach/a"));
  EXPECT_NE(parsed("wss://pod.example/tools/attach/a"), parsed("wss://pod.example/tools/attach/b"));
  EXPECT_EQ(parsed("ws://127.0.0.1:80/a"), parsed("ws://127.0.0.1/a"));
  EXPECT_NE(parsed("ws://127.0.0.1:81/a"), parsed("ws://127.0.0.1/a"));
  EXPECT_NE(parsed("wss://127.0.0.1/a"), parsed("ws://127.0.0.1/a"));
}

TEST(DialTarget, LoopbackIsDecidedOnTheParsedHost) {
  EXPECT_TRUE(parsed("ws://127.1.2.3/a").loopback);
  EXPECT_FALSE(parsed("ws://128.0.0.1/a").loopback);
  EXPECT_FALSE(parsed("ws://localhost.evil.example/a").loopback);
  EXPECT_FALSE(parsed("ws://[::2]/a").loopback);
  EXPECT_FALSE(parsed("ws://0.0.0.0/a").loopback);
}

TEST(DialTarget, RefusesWhatCannotBeDialledAsWritten) {
  for (const char* url : {"https://example.com/", "ws:///nohost", "ws://host:99999/",
                          "ws://host:0/", "ws://host:abc/", "ws://[::1/", "ws://user:pw@host/",
                          "wss://host/a#frag", "ws://ho%73t/", "not a url", "ws://[v1.x]/", ""}) {
    EXPECT_NE(refusal(url), "") << url;
  }
  EXPECT_NE(refusal("ws://user:pw@host/").find("user info"), std::string::npos);
}

// Boost.URL 1.81 asserts on some URLs without an authority: they never reach it.
TEST(DialTarget, AUrlWithoutAnAuthorityOrInOtherBytesIsRefusedBeforeTheParser) {
  for (const std::string& url :
       {std::string("httphttp:\xc0"), std::string("e3cohT:#"), std::string("ws:#"),
        std::string("ws:host/"), std::string("ws://h\x80st/"), std::string("ws://host/a b"),
        std::string("ws://host/\x01"), std::string("1ws://host/")}) {
    EXPECT_NE(refusal(url), "") << url;
  }
}

}  // namespace
}  // namespace sb
