// [[pty_attach]] blocks: the pods the switchboard dials.
#include "supervisor/config/config.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>
#include <string_view>

#include "tests/unit/supervisor/config/config_test_support.hpp"

namespace sb::config::test {
namespace {

TEST(ConfigPod, BecomesANamedPrincipalOnItsComputer) {
  const Config config = parse(kTwoComputers + kOwner +
                              pty("p",
                                  "computer = \"muse-vm\"\nurl = \"wss://h/tools/attach/s\"\n"
                                  "secret_file = \"~/s.secret\"\ntools = [\" a \", \"b\"]"));
  ASSERT_EQ(config.pods.size(), 1u);
  const auto& attach = config.pods[0];
  EXPECT_EQ(attach.name, "p");
  EXPECT_EQ(attach.url, "wss://h/tools/attach/s");
  EXPECT_EQ(attach.computer, "muse-vm");
  EXPECT_EQ(attach.tools.names, (std::set<std::string, std::less<>>{"a", "b"}));
  EXPECT_EQ(attach.secret_file, fs::path("/home/u/s.secret"));
  EXPECT_FALSE(attach.allow_insecure_transport);
  EXPECT_FALSE(attach.max_inflight);
}

TEST(ConfigPod, NameSharesTheClientNamespace) {
  const std::string with_client = error_of(kMacmini + kOwner + pty("owner", kPodBody));
  EXPECT_TRUE(Contains(with_client, "[[pty_attach]] \"owner\": "));
  EXPECT_TRUE(Contains(with_client, "already used by a client or attach"));
  const std::string with_attach =
      error_of(kMacmini + pty("p", kPodBody) +
               pty("p", "url = \"wss://other/\"\nsecret_file = \"x\"\ntools = [\"*\"]"));
  EXPECT_TRUE(Contains(with_attach, "already used by a client or attach"));
  EXPECT_TRUE(Contains(error_of(kMacmini + pty("a b", kPodBody)),
                       "name must be 1-64 chars of [A-Za-z0-9._-]"));
}

std::string pod_url_error(std::string_view url, std::string_view extra = "") {
  return error_of(kMacmini + kOwner +
                  pty("p", "url = \"" + std::string(url) +
                               "\"\nsecret_file = \"x\"\ntools = [\"*\"]\n" + std::string(extra)));
}

void expect_pod_url_ok(std::string_view url, std::string_view extra = "") {
  EXPECT_NO_THROW(
      parse(kMacmini + kOwner +
            pty("p", "url = \"" + std::string(url) + "\"\nsecret_file = \"x\"\ntools = [\"*\"]\n" +
                         std::string(extra))))
      << url;
}

TEST(ConfigPod, UrlMustParseAndHaveAHost) {
  EXPECT_TRUE(Contains(pod_url_error("not a url"), "is not a URL"));
  EXPECT_TRUE(Contains(pod_url_error("wss://[nothex]/x"), "is not a URL"));
  EXPECT_TRUE(Contains(pod_url_error("wss://user:pw@h/x"), "user info"));
  EXPECT_TRUE(Contains(pod_url_error("wss:///tools/attach/s"), "no host"));
  EXPECT_TRUE(Contains(pod_url_error("wss:relative"), "no host"));
}

TEST(ConfigPod, WsOnlyToLoopbackUnlessAllowed) {
  const std::string error = pod_url_error("ws://100.64.1.2:8080/tools/attach/s");
  EXPECT_TRUE(Contains(error, "[[pty_attach]] \"p\": "));
  EXPECT_TRUE(Contains(error, "in clear"));
  EXPECT_TRUE(Contains(error, "wss://"));
  EXPECT_TRUE(Contains(error, "allow_insecure_transport = true"));
  EXPECT_TRUE(Contains(pod_url_error("ws://example.com/"), "in clear"));
  expect_pod_url_ok("ws://localhost:8080/tools/attach/s");
  expect_pod_url_ok("ws://LOCALHOST/x");
  expect_pod_url_ok("ws://127.0.0.1:8080/x");
  expect_pod_url_ok("ws://127.9.8.7/x");
  expect_pod_url_ok("ws://[::1]:8080/x");
  expect_pod_url_ok("ws://100.64.1.2:8080/x", "allow_insecure_transport = true");
  expect_pod_url_ok("wss://100.64.1.2/x");
  expect_pod_url_ok("wss://pod.example.ts.net/tools/attach/s");
}

TEST(ConfigPod, OtherSchemesAreRefused) {
  EXPECT_TRUE(Contains(pod_url_error("https://h/x"), "is not ws:// or wss://"));
  EXPECT_TRUE(Contains(pod_url_error("http://localhost/x"), "is not ws:// or wss://"));
}

TEST(ConfigPod, DuplicateUrlIsRefused) {
  const std::string error = error_of(kMacmini + pty("a", kPodBody) + pty("b", kPodBody));
  EXPECT_TRUE(Contains(error, "[[pty_attach]] \"b\": "));
  EXPECT_TRUE(Contains(error, "evict each other"));
  // The same session written another way (scheme and host case, a default port) is the
  // same target: compared parsed, not as text.
  const std::string other_spelling =
      "url = \"WSS://Pod.Example.TS.net:443/tools/attach/s1\"\nsecret_file = \"/x\"\n"
      "tools = [\"*\"]\n";
  EXPECT_TRUE(Contains(error_of(kMacmini + pty("a", kPodBody) + pty("b", other_spelling)),
                       "evict each other"));
}

TEST(ConfigPod, ComputerIsRequiredWithSeveralComputers) {
  const std::string error = error_of(kTwoComputers + kOwner + pty("p", kPodBody));
  EXPECT_TRUE(Contains(error, "[[pty_attach]] \"p\": `computer` is required"));
  EXPECT_TRUE(Contains(error, "2 computers"));
  EXPECT_EQ(parse(kMacmini + pty("p", kPodBody)).pods[0].computer, "macmini");
}

TEST(ConfigPod, UnconfiguredComputerIsRefused) {
  EXPECT_TRUE(
      Contains(error_of(kTwoComputers + kOwner + pty("p", kPodBody + "computer = \"macmni\"")),
               "\"macmni\" is not a configured computer"));
}

TEST(ConfigPod, ToolsFollowTheToolListRules) {
  const std::string no_tools = "url = \"wss://h/\"\nsecret_file = \"x\"\n";
  EXPECT_TRUE(Contains(error_of(kMacmini + pty("p", no_tools + "tools = []")),
                       "[[pty_attach]] \"p\": `tools` is empty"));
  EXPECT_TRUE(Contains(error_of(kMacmini + pty("p", no_tools + "tools = [\"*\", \"x\"]")),
                       "mixes \"*\" with names"));
}

TEST(ConfigPod, SecretFileIsExpandedAndNotRead) {
  const Config config =
      parse(kMacmini +
            pty("p", "url = \"wss://h/\"\nsecret_file = \"~/missing/secret\"\ntools = [\"*\"]"));
  EXPECT_EQ(config.pods[0].secret_file, fs::path("/home/u/missing/secret"));
}

TEST(ConfigPod, AttachesAloneAreEnoughCallers) {
  const Config config = parse(kMacmini + pty("p", kPodBody));
  EXPECT_TRUE(config.clients.empty());
  EXPECT_EQ(config.pods.size(), 1u);
}

TEST(ConfigPod, NoClientAndNoAttachIsRefused) {
  EXPECT_TRUE(Contains(error_of(kTwoComputers), "nothing could ever call"));
}

// A pod is dialled through a proxy only when the config says so: the block's `proxy`, else
// the top-level `pty_attach_proxy`; "environment" names the service's own; a URL is
// checked at load, credentials only from a file.
TEST(ConfigPod, AProxyOnlyWhenConfiguredAndCheckedAtLoad) {
  const auto pod_with = [](std::string_view top, std::string_view extra) {
    return std::string(top) + kMacmini + kOwner + pty("p", kPodBody + std::string(extra));
  };
  EXPECT_EQ(parse(pod_with("", "")).pods.at(0).proxy, "") << "direct unless told";
  const Config own = parse(
      pod_with("", "proxy = \"https://proxy.corp:3129\"\nproxy_credentials_file = \"~/proxy.pw\""));
  EXPECT_EQ(own.pods.at(0).proxy, "https://proxy.corp:3129");
  EXPECT_EQ(own.pods.at(0).proxy_credentials_file, fs::path("/home/u/proxy.pw"));
  EXPECT_EQ(parse(pod_with("pty_attach_proxy = \"http://proxy.corp:3128\"\n", "")).pods.at(0).proxy,
            "http://proxy.corp:3128");
  EXPECT_EQ(parse(pod_with("pty_attach_proxy = \"http://proxy.corp:3128\"\n", "proxy = \"\""))
                .pods.at(0)
                .proxy,
            "")
      << "a block's empty proxy dials directly whatever the default";
  EXPECT_EQ(parse(pod_with("", "proxy = \"environment\"")).pods.at(0).proxy, "environment");
  EXPECT_TRUE(Contains(error_of(pod_with("", "proxy = \"socks5://p:1080\"")),
                       "`proxy`: the proxy: only an http:// or https:// proxy is supported"));
  const std::string with_password = error_of(pod_with("", "proxy = \"http://u:hunter2@p:3128\""));
  EXPECT_TRUE(Contains(with_password, "credentials file"));
  EXPECT_FALSE(Contains(with_password, "hunter2")) << "a password is never repeated";
  EXPECT_TRUE(Contains(error_of(pod_with("pty_attach_proxy = \"nope\"\n", "")),
                       "`pty_attach_proxy`: the proxy: not a URL"));
  EXPECT_TRUE(Contains(error_of(pod_with("", "proxy_credentials_file = \"/pw\"")),
                       "`proxy_credentials_file` is set but no proxy is"));
}

}  // namespace
}  // namespace sb::config::test
