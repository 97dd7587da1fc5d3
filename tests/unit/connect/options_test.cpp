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

}  // namespace
}  // namespace sb::connect
