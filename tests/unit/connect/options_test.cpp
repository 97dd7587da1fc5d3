// switchboard-connect's settings (connect/options.hpp): one switchboard or several, from the
// command line or the TOML file, each URL held to the transport rule.
#include "connect/options.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "harness/process.hpp"

namespace sb::connect {
namespace {

std::vector<std::string> urls_of(const Options& options) {
  std::vector<std::string> urls;
  for (const SwitchboardUrl& url : options.urls) urls.push_back(url.url);
  return urls;
}

Options parsed(std::vector<std::string> words) {
  words.insert(words.end(), {"--secret-file", "/s", "--", "server"});
  return parse_options(words, "/home/me", "");
}

TEST(ConnectOptions, EachUrlGivenIsOneLink) {
  EXPECT_EQ(urls_of(parsed({"--url", "ws://127.0.0.1:1/vm/attach"})),
            (std::vector<std::string>{"ws://127.0.0.1:1/vm/attach"}));
  EXPECT_EQ(
      urls_of(
          parsed({"--url", "wss://one.example/vm/attach", "--url", "wss://two.example/vm/attach"})),
      (std::vector<std::string>{"wss://one.example/vm/attach", "wss://two.example/vm/attach"}));
}

TEST(ConnectOptions, EveryUrlKeepsToTheTransportRuleAndNoneIsGivenTwice) {
  EXPECT_THROW(
      parsed({"--url", "wss://one.example/vm/attach", "--url", "ws://two.example/vm/attach"}),
      UsageError);
  EXPECT_NO_THROW(parsed({"--url", "wss://one.example/vm/attach", "--url",
                          "ws://two.example/vm/attach", "--allow-insecure-transport"}));
  EXPECT_THROW(
      parsed({"--url", "wss://one.example/vm/attach", "--url", "wss://one.example/vm/attach"}),
      UsageError);
  // The same switchboard spelled another way is the same link.
  EXPECT_THROW(
      parsed({"--url", "wss://one.example/vm/attach", "--url", "wss://ONE.example:443/vm/attach"}),
      UsageError);
  EXPECT_THROW(parsed({}), UsageError);
}

TEST(ConnectOptions, TheFileGivesUrlOrUrlsAndTheCommandLineWins) {
  const harness::TempDir dir("sb-connect-options");
  const auto file = [&](const std::string& text) {
    const auto path = dir.path() / "connect.toml";
    std::ofstream(path) << text << "\ncommand = [\"server\"]\nsecret_file = \"/s\"\n";
    return path.string();
  };
  const std::string both =
      file(R"(urls = ["wss://one.example/vm/attach", "wss://two.example/vm/attach"])");
  EXPECT_EQ(
      urls_of(parse_options({"-c", both}, "", "")),
      (std::vector<std::string>{"wss://one.example/vm/attach", "wss://two.example/vm/attach"}));
  EXPECT_EQ(urls_of(parse_options({"-c", both, "--url", "wss://three.example/vm/attach"}, "", "")),
            (std::vector<std::string>{"wss://three.example/vm/attach"}));
  EXPECT_THROW(parse_options({"-c", file(R"(url = "wss://one.example/vm/attach"
urls = ["wss://two.example/vm/attach"])")},
                             "", ""),
               UsageError);
  EXPECT_THROW(parse_options({"-c", file("urls = [1]")}, "", ""), UsageError);
  EXPECT_THROW(parse_options({"-c", file("urls = \"wss://one.example/vm/attach\"")}, "", ""),
               UsageError);
}

// A gateway that adds the secret is the proxy, and it can add it only inside TLS it
// inspects: the mode is refused anywhere the attach would leave without a secret in clear
// or straight to the switchboard.
TEST(ConnectOptions, AGatewayAddsTheSecretOnlyForWssThroughAProxy) {
  const auto gateway = [](std::vector<std::string> words, const ProxyEnvironment& environment) {
    words.insert(words.end(), {"--gateway-adds-secret", "--", "server"});
    Options options = parse_options(words, "/home/me", "/run/credentials/x");
    choose_proxies(options, environment);
    return options;
  };
  const Options through = gateway(
      {"--url", "wss://sb.example/vm/attach", "--proxy", "http://gateway.example:8080"}, {});
  EXPECT_TRUE(through.gateway_adds_secret);
  EXPECT_TRUE(through.secret_file.empty()) << "not even systemd's credential";
  EXPECT_TRUE(through.urls.front().proxy);
  EXPECT_NO_THROW(gateway({"--url", "wss://sb.example/vm/attach"},
                          {.https_proxy = "http://gateway.example:8080"}))
      << "the environment's proxy is a proxy too";
  EXPECT_THROW(gateway({"--url", "wss://sb.example/vm/attach"}, {}), UsageError)
      << "straight to the switchboard";
  EXPECT_THROW(gateway({"--url", "wss://sb.example/vm/attach"},
                       {.https_proxy = "http://gateway.example:8080", .no_proxy = "sb.example"}),
               UsageError)
      << "NO_PROXY names it: straight to the switchboard";
  EXPECT_THROW(gateway({"--url", "ws://sb.example/vm/attach", "--allow-insecure-transport",
                        "--proxy", "http://gateway.example:8080"},
                       {}),
               UsageError)
      << "in clear";
  EXPECT_THROW(gateway({"--url", "wss://sb.example/vm/attach", "--proxy",
                        "http://gateway.example:8080", "--secret-file", "/s"},
                       {}),
               UsageError)
      << "a secret of its own as well";
}

}  // namespace
}  // namespace sb::connect
