// The configuration loader (docs/configuration.md), and the `switchboard` command line that
// sits on top of it (check, gen-secret, hash).
#include "supervisor/config/config.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <string_view>

#include "shared/verifier.hpp"

namespace {

namespace fs = std::filesystem;
using sb::config::Config;
using sb::config::ConfigError;

constexpr std::string_view kHome = "/home/u";

// ---------------------------------------------------------------------------------------
// Helpers

std::string verifier(std::string_view seed) {
  return sb::render_verifier(sb::verifier_of(seed));
}

// Test files write @C1@.. for computer secrets and @T1@.. for client tokens; each marker
// becomes a distinct real verifier.
std::string fill(std::string text) {
  static const std::map<std::string, std::string> kMarkers{
      {"@C1@", verifier("computer-1")}, {"@C2@", verifier("computer-2")},
      {"@C3@", verifier("computer-3")}, {"@T1@", verifier("client-1")},
      {"@T2@", verifier("client-2")},   {"@T3@", verifier("client-3")},
  };
  for (const auto& [marker, value] : kMarkers) {
    for (auto at = text.find(marker); at != std::string::npos; at = text.find(marker)) {
      text.replace(at, marker.size(), value);
    }
  }
  return text;
}

Config parse(std::string_view text, std::string_view home = kHome) {
  return sb::config::parse_config(fill(std::string(text)), home);
}

std::string error_of(std::string_view text, std::string_view home = kHome) {
  try {
    parse(text, home);
  } catch (const ConfigError& error) {
    return error.what();
  }
  ADD_FAILURE() << "the config was accepted:\n" << fill(std::string(text));
  return {};
}

testing::AssertionResult Contains(const std::string& haystack, std::string_view needle) {
  if (haystack.find(needle) != std::string::npos) return testing::AssertionSuccess();
  return testing::AssertionFailure()
         << "\"" << haystack << "\"\n  does not contain \"" << needle << "\"";
}

std::string computer(std::string_view name, std::string_view secret, std::string_view extra = "") {
  return "\n[[computer]]\nname = \"" + std::string(name) + "\"\nsecret_sha256 = \"" +
         std::string(secret) + "\"\n" + std::string(extra) + "\n";
}

std::string client(std::string_view name, std::string_view token, std::string_view body) {
  return "\n[[client]]\nname = \"" + std::string(name) + "\"\ntoken_sha256 = \"" +
         std::string(token) + "\"\n" + std::string(body) + "\n";
}

std::string pty(std::string_view name, std::string_view body) {
  return "\n[[pty_attach]]\nname = \"" + std::string(name) + "\"\n" + std::string(body) + "\n";
}

const std::string kMacmini = computer("macmini", "@C1@");
const std::string kMuse = computer("muse-vm", "@C2@");
const std::string kTwoComputers = kMacmini + kMuse;
const std::string kOwner =
    client("owner", "@T1@", "default_computer = \"macmini\"\ncomputers = { \"*\" = [\"*\"] }");
const std::string kV1 = "[vm]\nsecret_sha256 = \"@C1@\"\n";
const std::string kPodBody =
    "url = \"wss://pod.example.ts.net/tools/attach/s1\"\nsecret_file = \"/nonexistent\"\n"
    "tools = [\"*\"]\n";

// A fresh directory under /tmp for files, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/sb-config-test-XXXXXX";
    const char* made = ::mkdtemp(pattern);
    if (!made) throw std::runtime_error("mkdtemp failed");
    path_ = made;
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  fs::path write(std::string_view name, std::string_view content) const {
    const fs::path path = path_ / name;
    std::ofstream(path, std::ios::binary) << content;
    return path;
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// ---------------------------------------------------------------------------------------
// The TOML layer — strict keys, types, required keys

TEST(ConfigToml, SyntaxErrorSaysWhere) {
  EXPECT_TRUE(Contains(error_of("listen = [\n"), "TOML parse error at line"));
}

TEST(ConfigToml, UnknownTopLevelKeyIsRefused) {
  const std::string error = error_of("listne = \"127.0.0.1:8790\"\n" + kMacmini + kOwner);
  EXPECT_TRUE(Contains(error, "unknown key `listne`"));
  EXPECT_TRUE(Contains(error, "listen"));  // lists what is allowed
}

TEST(ConfigToml, UnknownKeyInEveryBlockIsRefused) {
  struct Case {
    std::string text;
    std::string owner;
  };
  const std::vector<Case> cases{
      {"[vm]\nsecret_sha256 = \"@C1@\"\nname = \"x\"\n" + kOwner, "[vm]"},
      {computer("macmini", "@C1@", "maxinflight = 3") + kOwner, "[[computer]] \"macmini\""},
      {"[timeouts]\ndefault = 5\n" + kMacmini + kOwner, "[timeouts]"},
      {kMacmini + kOwner + client("c", "@T2@", "computers = { macmini = [\"a\"] }\ntool = []"),
       "[[client]] \"c\""},
      {kMacmini + kOwner + pty("p", kPodBody + "secret = \"x\""), "[[pty_attach]] \"p\""},
  };
  for (const Case& c : cases) {
    const std::string error = error_of(c.text);
    EXPECT_TRUE(Contains(error, c.owner + ": unknown key `"));
  }
}

TEST(ConfigToml, ComputersTableAndToolTimeoutsAreFreeForm) {
  const Config config =
      parse("[timeouts.tools]\nany_tool_name = 5\n\"odd name\" = 6\n" + kMacmini +
            client("c", "@T1@", "computers = { macmini = [\"anything\", \"at all\"] }"));
  EXPECT_EQ(config.timeouts.for_tool("any_tool_name"), 5);
  EXPECT_EQ(config.timeouts.for_tool("odd name"), 6);
  EXPECT_TRUE(config.clients[0].grant.tools_for("macmini")->allows("at all"));
}

TEST(ConfigToml, TypeErrorsNameTheKey) {
  EXPECT_TRUE(
      Contains(error_of("listen = 8790\n" + kMacmini + kOwner), "`listen` must be a string"));
  EXPECT_TRUE(Contains(error_of("max_inflight = \"8\"\n" + kMacmini + kOwner),
                       "`max_inflight` must be an integer"));
  EXPECT_TRUE(Contains(error_of("allow_insecure_bind = 1\n" + kMacmini + kOwner),
                       "`allow_insecure_bind` must be true or false"));
  EXPECT_TRUE(Contains(error_of(kMacmini + client("c", "@T1@", "computers = { macmini = \"a\" }")),
                       "[[client]] \"c\": `computers.macmini` must be an array of strings"));
  EXPECT_TRUE(Contains(error_of(kMacmini + client("c", "@T1@", "computers = { macmini = [1] }")),
                       "`computers.macmini` must be an array of strings"));
  EXPECT_TRUE(Contains(error_of("[timeouts.tools]\nbash = \"60\"\n" + kMacmini + kOwner),
                       "[timeouts.tools]: `bash` must be a number of seconds"));
  EXPECT_TRUE(Contains(error_of("[computer]\nname = \"a\"\n" + kOwner),
                       "`computer` must be an array of tables"));
}

TEST(ConfigToml, MissingRequiredKeyIsNamed) {
  EXPECT_TRUE(Contains(error_of(kMacmini + "\n[[client]]\nname = \"c\"\n"),
                       "[[client]] \"c\": missing required key `token_sha256`"));
  EXPECT_TRUE(Contains(error_of("[[computer]]\nsecret_sha256 = \"@C1@\"\n" + kOwner),
                       "[[computer]] #1: missing required key `name`"));
  EXPECT_TRUE(Contains(error_of(kMacmini + kOwner + pty("p", "url = \"wss://h/\"\ntools = []")),
                       "missing required key `secret_file`"));
}

TEST(ConfigToml, BareDottedComputerKeyIsExplained) {
  const std::string error =
      error_of(kMacmini + client("c", "@T1@", "computers = { rpi1.local = [\"a\"] }"));
  EXPECT_TRUE(Contains(error, "`computers.rpi1`"));
  EXPECT_TRUE(Contains(error, "dotted key"));
  EXPECT_TRUE(Contains(error, "rpi1.local"));
  EXPECT_TRUE(Contains(error, "rpi1-local"));
}

// ---------------------------------------------------------------------------------------
// Top-level keys (docs/configuration.md, "Top level")

TEST(ConfigListen, DefaultsToLoopback8790) {
  const Config config = parse(kMacmini + kOwner);
  EXPECT_EQ(config.listen_ip, "127.0.0.1");
  EXPECT_EQ(config.listen_port, 8790);
  EXPECT_EQ(config.listen_display(), "127.0.0.1:8790");
  EXPECT_EQ(config.max_inflight, 8);
  EXPECT_TRUE(config.audit_args);
  EXPECT_FALSE(config.audit_path);
  EXPECT_FALSE(config.allow_insecure_bind);
}

TEST(ConfigListen, AcceptsIpv4AndIpv6SocketAddresses) {
  const Config v4 = parse("listen = \"127.0.0.2:9000\"\n" + kMacmini + kOwner);
  EXPECT_EQ(v4.listen_display(), "127.0.0.2:9000");
  const Config v6 = parse("listen = \"[::1]:8790\"\n" + kMacmini + kOwner);
  EXPECT_EQ(v6.listen_ip, "::1");
  EXPECT_EQ(v6.listen_display(), "[::1]:8790");
  const Config long_v6 = parse("listen = \"[0:0:0:0:0:0:0:1]:8790\"\n" + kMacmini + kOwner);
  EXPECT_EQ(long_v6.listen_display(), "[::1]:8790");
}

TEST(ConfigListen, HostnamesAndMalformedAddressesAreRefused) {
  for (const char* bad : {"localhost:8790", "127.0.0.1", "127.0.0.1:99999", "::1:8790", "[::1]",
                          "127.0.0.1:", "127.0.0.1:80x", "127.1:8790", "[localhost]:1"}) {
    const std::string error =
        error_of("listen = \"" + std::string(bad) + "\"\n" + kMacmini + kOwner);
    EXPECT_TRUE(Contains(error, "`listen` must be ip:port")) << bad;
  }
}

TEST(ConfigListen, NonLoopbackNeedsAllowInsecureBind) {
  const std::string error = error_of("listen = \"0.0.0.0:8790\"\n" + kMacmini + kOwner);
  EXPECT_TRUE(Contains(error, "\"0.0.0.0:8790\""));
  EXPECT_TRUE(Contains(error, "not a loopback address"));
  EXPECT_TRUE(Contains(error, "`tailscale serve`"));
  EXPECT_TRUE(Contains(error, "tunnel"));
  EXPECT_TRUE(Contains(error, "allow_insecure_bind = true"));
  for (const char* bad : {"[::]:8790", "192.168.1.2:8790", "[::ffff:127.0.0.1]:8790"}) {
    EXPECT_TRUE(Contains(error_of("listen = \"" + std::string(bad) + "\"\n" + kMacmini + kOwner),
                         "not a loopback address"))
        << bad;
  }
  const Config opted_in =
      parse("listen = \"0.0.0.0:8790\"\nallow_insecure_bind = true\n" + kMacmini + kOwner);
  EXPECT_TRUE(opted_in.allow_insecure_bind);
  EXPECT_EQ(opted_in.listen_display(), "0.0.0.0:8790");
  EXPECT_NO_THROW(parse("listen = \"127.200.1.1:1\"\n" + kMacmini + kOwner));
}

TEST(ConfigMetricsListen, IsOffUnlessSetAndLoopbackUnlessAllowed) {
  EXPECT_FALSE(parse(kMacmini + kOwner).metrics_listen);
  const Config on = parse("metrics_listen = \"[0:0::1]:9790\"\n" + kMacmini + kOwner);
  ASSERT_TRUE(on.metrics_listen);
  EXPECT_EQ(on.metrics_listen->display(), "[::1]:9790");
  const std::string remote = error_of("metrics_listen = \"10.0.0.2:9790\"\n" + kMacmini + kOwner);
  EXPECT_TRUE(Contains(remote, "metrics_listen = \"10.0.0.2:9790\" is not a loopback address"))
      << remote;
  EXPECT_TRUE(Contains(remote, "allow_insecure_bind = true"));
  EXPECT_NO_THROW(
      parse("metrics_listen = \"0.0.0.0:9790\"\nallow_insecure_bind = true\n" + kMacmini + kOwner));
  for (const char* bad : {"localhost:9790", "127.0.0.1", "127.0.0.1:99999", ""}) {
    EXPECT_TRUE(
        Contains(error_of("metrics_listen = \"" + std::string(bad) + "\"\n" + kMacmini + kOwner),
                 "`metrics_listen` must be ip:port"))
        << bad;
  }
}

TEST(ConfigMaxInflight, GlobalMustBe1To64) {
  for (const char* bad : {"0", "65", "-1"}) {
    const std::string error =
        error_of("max_inflight = " + std::string(bad) + "\n" + kMacmini + kOwner);
    EXPECT_TRUE(Contains(error, "`max_inflight` must be 1..=64")) << bad;
  }
  EXPECT_EQ(parse("max_inflight = 1\n" + kMacmini + kOwner).computers[0].max_inflight, 1);
  EXPECT_EQ(parse("max_inflight = 64\n" + kMacmini + kOwner).computers[0].max_inflight, 64);
}

TEST(ConfigMaxInflight, ComputerMustBe1To64AndDefaultsToGlobal) {
  const std::string error = error_of(computer("macmini", "@C1@", "max_inflight = 0") + kOwner);
  EXPECT_TRUE(Contains(error, "[[computer]] \"macmini\": `max_inflight` must be 1..=64"));
  const Config config = parse("max_inflight = 5\n" + kMacmini +
                              computer("muse-vm", "@C2@", "max_inflight = 64") + kOwner);
  EXPECT_EQ(config.computers[0].max_inflight, 5);
  EXPECT_EQ(config.computers[1].max_inflight, 64);
}

TEST(ConfigMaxInflight, PerCallerMustBe1To64) {
  const std::string client_error = error_of(
      kMacmini + client("c", "@T1@", "computers = { macmini = [\"a\"] }\nmax_inflight = 65"));
  EXPECT_TRUE(Contains(client_error, "[[client]] \"c\": `max_inflight` must be 1..=64"));
  const std::string pod_error =
      error_of(kMacmini + kOwner + pty("p", kPodBody + "max_inflight = 0"));
  EXPECT_TRUE(Contains(pod_error, "[[pty_attach]] \"p\": `max_inflight` must be 1..=64"));
  const Config config =
      parse(kMacmini + client("c", "@T1@", "computers = { macmini = [\"a\"] }\nmax_inflight = 4") +
            pty("p", kPodBody + "max_inflight = 64"));
  EXPECT_EQ(config.clients[0].max_inflight, 4);
  EXPECT_EQ(config.pods[0].max_inflight, 64);
  EXPECT_FALSE(parse(kMacmini + kOwner).clients[0].max_inflight);
}

TEST(ConfigAudit, ArgsAndPathAreRead) {
  const Config config =
      parse("audit_args = false\naudit_path = \"/var/log/sb.jsonl\"\n" + kMacmini + kOwner);
  EXPECT_FALSE(config.audit_args);
  EXPECT_EQ(config.audit_path, fs::path("/var/log/sb.jsonl"));
}

// ---------------------------------------------------------------------------------------
// Timeouts

TEST(ConfigTimeouts, DefaultsIncludeBuiltinScreenshot) {
  const Config config = parse(kMacmini + kOwner);
  EXPECT_EQ(config.timeouts.default_secs, 60);
  EXPECT_EQ(config.timeouts.control_secs, 15);
  EXPECT_EQ(config.timeouts.for_tool("screenshot"), 10);
  EXPECT_EQ(config.timeouts.for_tool("bash"), 60);
}

TEST(ConfigTimeouts, UserEntriesAreMergedWithTheBuiltin) {
  const Config config =
      parse("[timeouts]\ndefault_secs = 30\ncontrol_secs = 5\n[timeouts.tools]\nbash = 600\n" +
            kMacmini + kOwner);
  EXPECT_EQ(config.timeouts.for_tool("bash"), 600);
  EXPECT_EQ(config.timeouts.for_tool("screenshot"), 10);
  EXPECT_EQ(config.timeouts.for_tool("other"), 30);
  EXPECT_EQ(config.timeouts.control_secs, 5);
  const Config overridden = parse("[timeouts.tools]\nscreenshot = 20\n" + kMacmini + kOwner);
  EXPECT_EQ(overridden.timeouts.for_tool("screenshot"), 20);
}

TEST(ConfigTimeouts, EveryValueMustBe1To600) {
  const std::vector<std::pair<std::string, std::string>> cases{
      {"[timeouts]\ndefault_secs = 0\n", "`default_secs` must be 1..=600 seconds"},
      {"[timeouts]\ncontrol_secs = 601\n", "`control_secs` must be 1..=600 seconds"},
      {"[timeouts.tools]\nbash = 0\n", "`bash` must be 1..=600 seconds"},
      {"[timeouts.tools]\nbash = -5\n", "`bash` must be 1..=600 seconds"},
  };
  for (const auto& [text, expected] : cases) {
    EXPECT_TRUE(Contains(error_of(text + kMacmini + kOwner), expected));
  }
}

TEST(ConfigTimeouts, WriteAndIdleDeadlinesDefaultTo30And60) {
  const Config defaults = parse(kMacmini + kOwner);
  EXPECT_EQ(defaults.timeouts.write_secs, 30);
  EXPECT_EQ(defaults.timeouts.idle_secs, 60);
  const Config set = parse("[timeouts]\nwrite_secs = 5\nidle_secs = 7\n" + kMacmini + kOwner);
  EXPECT_EQ(set.timeouts.write_secs, 5);
  EXPECT_EQ(set.timeouts.idle_secs, 7);
  EXPECT_TRUE(Contains(error_of("[timeouts]\nwrite_secs = 0\n" + kMacmini + kOwner),
                       "`write_secs` must be 1..=600 seconds"));
}

// ---------------------------------------------------------------------------------------
// [limits] and trust_peer_headers (docs/robustness.md)

TEST(ConfigLimits, DefaultsBoundConnectionsRequestsAndHeldReplies) {
  const Config config = parse(kMacmini + kOwner);
  EXPECT_EQ(config.limits.max_connections, 4096);
  EXPECT_EQ(config.limits.max_request_bytes, 1024u * 1024);
  EXPECT_EQ(config.limits.max_reply_buffer_bytes, 512ull << 20);
  EXPECT_TRUE(config.trust_peer_headers);
}

TEST(ConfigLimits, ValuesAreTakenAndOutOfRangeOnesRefused) {
  const Config config = parse(
      "trust_peer_headers = false\n[limits]\nmax_connections = 100\nmax_request_bytes = "
      "4096\nmax_reply_buffer_mib = 64\n" +
      kMacmini + kOwner);
  EXPECT_EQ(config.limits.max_connections, 100);
  EXPECT_EQ(config.limits.max_request_bytes, 4096u);
  EXPECT_EQ(config.limits.max_reply_buffer_bytes, 64ull << 20);
  EXPECT_FALSE(config.trust_peer_headers);
  const std::vector<std::pair<std::string, std::string>> cases{
      {"[limits]\nmax_connections = 0\n", "`max_connections` must be 8..="},
      {"[limits]\nmax_request_bytes = 10\n", "`max_request_bytes` must be 1024..="},
      // A reply may be 16 MiB: a smaller budget could never hold one.
      {"[limits]\nmax_reply_buffer_mib = 15\n", "`max_reply_buffer_mib` must be 16..="},
      {"[limits]\nmax_replies = 1\n", "max_replies"},
  };
  for (const auto& [text, expected] : cases) {
    EXPECT_TRUE(Contains(error_of(text + kMacmini + kOwner), expected)) << text;
  }
}

TEST(ConfigTimeouts, CheckedInOrderDefaultControlThenToolsAscending) {
  EXPECT_TRUE(
      Contains(error_of("[timeouts]\ncontrol_secs = 0\ndefault_secs = 0\n" + kMacmini + kOwner),
               "`default_secs`"));
  EXPECT_TRUE(Contains(
      error_of("[timeouts]\ncontrol_secs = 0\n[timeouts.tools]\na = 0\n" + kMacmini + kOwner),
      "`control_secs`"));
  EXPECT_TRUE(
      Contains(error_of("[timeouts.tools]\nzeta = 0\nalpha = 0\n" + kMacmini + kOwner), "`alpha`"));
}

// ---------------------------------------------------------------------------------------
// Computers

TEST(ConfigComputers, V1ConfigMapsToDefaultExactly) {
  const Config config = parse("max_inflight = 6\n" + kV1 +
                              client("connect", "@T1@", "tools = [\"sys_info\", \"screenshot\"]") +
                              client("agent", "@T2@", "tools = [\"*\"]"));
  EXPECT_TRUE(config.v1_form);
  ASSERT_EQ(config.computers.size(), 1u);
  EXPECT_EQ(config.computers[0].name, "default");
  EXPECT_EQ(config.computers[0].secret, sb::verifier_of("computer-1"));
  EXPECT_EQ(config.computers[0].max_inflight, 6);

  ASSERT_EQ(config.clients.size(), 2u);
  sb::config::Grant connect;
  connect.named["default"].names = {"sys_info", "screenshot"};
  EXPECT_EQ(config.clients[0].grant, connect);
  EXPECT_EQ(config.clients[0].default_computer, "default");
  sb::config::Grant agent;
  agent.named["default"].all = true;  // a named grant, not a wildcard one
  EXPECT_EQ(config.clients[1].grant, agent);
  EXPECT_EQ(config.clients[1].default_computer, "default");
  EXPECT_TRUE(config.wildcard_clients().empty());
}

TEST(ConfigComputers, V1ClientMayUseTheV2FormAndSetDefaultAndCap) {
  const Config config = parse(
      kV1 + client("a", "@T1@", "computers = { default = [\"x\"] }") +
      client("b", "@T2@", "tools = [\"y\"]\ndefault_computer = \"default\"\nmax_inflight = 2"));
  EXPECT_TRUE(config.clients[0].grant.tools_for("default")->allows("x"));
  EXPECT_EQ(config.clients[1].default_computer, "default");
  EXPECT_EQ(config.clients[1].max_inflight, 2);
}

TEST(ConfigComputers, V1PtyAttachTargetsDefault) {
  const Config config = parse(kV1 + pty("p", kPodBody));
  EXPECT_EQ(config.pods[0].computer, "default");
}

TEST(ConfigComputers, VmTogetherWithComputerIsRefused) {
  const std::string error = error_of(kV1 + kMuse + kOwner);
  EXPECT_TRUE(Contains(error, "[vm] and [[computer]]"));
  EXPECT_TRUE(Contains(error, "\"default\""));
  EXPECT_TRUE(Contains(error, "[[computer]] block"));
}

TEST(ConfigComputers, VmVerifierErrorHasItsContext) {
  EXPECT_TRUE(Contains(error_of("[vm]\nsecret_sha256 = \"abc\"\n" + kOwner),
                       "[vm].secret_sha256: a verifier must start with `sha256:`"));
}

TEST(ConfigComputers, KeepConfigOrder) {
  const Config config = parse(kMuse + kMacmini + kOwner);
  ASSERT_EQ(config.computers.size(), 2u);
  EXPECT_EQ(config.computers[0].name, "muse-vm");
  EXPECT_EQ(config.computers[1].name, "macmini");
  EXPECT_FALSE(config.v1_form);
}

TEST(ConfigComputers, DotInNameIsRefusedWithASuggestion) {
  const std::string error = error_of(computer("rpi1.local", "@C1@") + kOwner);
  EXPECT_TRUE(Contains(error, "[[computer]] \"rpi1.local\": "));
  EXPECT_TRUE(Contains(error, "may not contain `.`"));
  EXPECT_TRUE(Contains(error, "dotted key"));
  EXPECT_TRUE(Contains(error, "rpi1-local"));
  EXPECT_TRUE(Contains(error_of(computer("a.b.c", "@C1@") + kOwner), "\"a-b-c\""));
}

TEST(ConfigComputers, NameRule) {
  for (const std::string& bad : {std::string(), std::string("a b"), std::string("a/b"),
                                 std::string(65, 'a'), std::string("caf\xc3\xa9")}) {
    EXPECT_TRUE(Contains(error_of(computer(bad, "@C1@") + kOwner),
                         "computer name must be 1-64 chars of [A-Za-z0-9_-]"))
        << bad;
  }
  const std::string longest(64, 'z');
  EXPECT_EQ(parse(computer(longest, "@C1@") +
                  client("c", "@T1@", "computers = { " + longest + " = [\"a\"] }"))
                .computers[0]
                .name,
            longest);
  EXPECT_NO_THROW(
      parse(computer("A_b-9", "@C1@") + client("c", "@T1@", "computers = { A_b-9 = [\"a\"] }")));
}

TEST(ConfigComputers, OwnerIsAnEscapedQuotedName) {
  const std::string error = error_of(computer("a\\\"b", "@C1@") + kOwner);
  EXPECT_TRUE(Contains(error, "[[computer]] \"a\\\"b\": a computer name"));
}

TEST(ConfigComputers, DuplicateNameIsRefused) {
  EXPECT_TRUE(Contains(error_of(kMacmini + computer("macmini", "@C2@") + kOwner),
                       "[[computer]] \"macmini\": duplicate name"));
}

TEST(ConfigComputers, VerifierParseErrorNamesTheOwner) {
  const std::string error = error_of(computer("macmini", "sha256:zz") + kOwner);
  EXPECT_TRUE(Contains(error, "[[computer]] \"macmini\": `secret_sha256`: "));
  EXPECT_TRUE(Contains(error, "not hex"));
}

TEST(ConfigComputers, DuplicateVerifierBetweenComputersIsRefused) {
  const std::string error = error_of(kMacmini + computer("muse-vm", "@C1@") + kOwner);
  EXPECT_TRUE(Contains(error, "[[computer]] \"muse-vm\": "));
  EXPECT_TRUE(Contains(error, "already another computer's"));
  EXPECT_TRUE(Contains(error, "\"macmini\""));
}

TEST(ConfigComputers, NoComputerIsNothingToRelayTo) {
  const std::string error = error_of(kOwner);
  EXPECT_TRUE(Contains(error, "nothing to relay to"));
  EXPECT_TRUE(Contains(error, "[[computer]]"));
  EXPECT_TRUE(Contains(error, "[vm]"));
}

// ---------------------------------------------------------------------------------------
// Clients

TEST(ConfigClients, NameRuleAllowsDots) {
  for (const std::string& bad :
       {std::string(), std::string("a b"), std::string(65, 'x'), std::string("a/b")}) {
    EXPECT_TRUE(
        Contains(error_of(kMacmini + client(bad, "@T1@", "computers = { macmini = [\"a\"] }")),
                 "name must be 1-64 chars of [A-Za-z0-9._-]"))
        << bad;
  }
  EXPECT_EQ(parse(kMacmini + client("c.d-e_f", "@T1@", "computers = { macmini = [\"a\"] }"))
                .clients[0]
                .name,
            "c.d-e_f");
}

TEST(ConfigClients, ComputerAndClientMayShareAName) {
  EXPECT_NO_THROW(parse(kMacmini + client("macmini", "@T1@", "computers = { macmini = [\"a\"] }")));
}

TEST(ConfigClients, DuplicateNameIsRefused) {
  const std::string body = "computers = { macmini = [\"a\"] }";
  EXPECT_TRUE(Contains(error_of(kMacmini + client("c", "@T1@", body) + client("c", "@T2@", body)),
                       "[[client]] \"c\": duplicate name"));
}

TEST(ConfigClients, TokenVerifierParseErrorNamesTheOwner) {
  const std::string error =
      error_of(kMacmini + client("c", "sha256:abc", "computers = { macmini = [\"a\"] }"));
  EXPECT_TRUE(Contains(error, "[[client]] \"c\": `token_sha256`: "));
  EXPECT_TRUE(Contains(error, "not hex"));
}

TEST(ConfigClients, TokenEqualToAComputerSecretIsRefused) {
  const std::string error =
      error_of(kTwoComputers + client("c", "@C2@", "computers = { macmini = [\"a\"] }"));
  EXPECT_TRUE(Contains(error, "[[client]] \"c\": "));
  EXPECT_TRUE(Contains(error, "must differ"));
  EXPECT_TRUE(Contains(error, "\"muse-vm\""));
}

TEST(ConfigClients, TokenSharedBetweenClientsIsRefused) {
  const std::string body = "computers = { macmini = [\"a\"] }";
  const std::string error =
      error_of(kMacmini + client("a", "@T1@", body) + client("b", "@T1@", body));
  EXPECT_TRUE(Contains(error, "[[client]] \"b\": "));
  EXPECT_TRUE(Contains(error, "shared with another client"));
}

TEST(ConfigClients, ToolsAndComputersTogetherAreRefused) {
  const std::string error =
      error_of(kV1 + client("c", "@T1@", "tools = [\"a\"]\ncomputers = { default = [\"a\"] }"));
  EXPECT_TRUE(Contains(error, "both set"));
  EXPECT_TRUE(Contains(error, "keep `computers` only"));
}

TEST(ConfigClients, V1ToolsBesideComputerBlocksAreRefused) {
  const std::string error = error_of(kMacmini + client("c", "@T1@", "tools = [\"sys_info\"]"));
  EXPECT_TRUE(Contains(error, "[[client]] \"c\": "));
  EXPECT_TRUE(Contains(error, "v1 form"));
  EXPECT_TRUE(Contains(error, "computers = { <name> = [...] }"));
  EXPECT_TRUE(Contains(error, "computers = { macmini = [\"sys_info\"] }"));
}

TEST(ConfigClients, NeitherToolsNorComputersIsRefused) {
  const std::string error = error_of(kMacmini + client("c", "@T1@", ""));
  EXPECT_TRUE(Contains(error, "no `computers`"));
  EXPECT_TRUE(Contains(error, "{ \"*\" = [\"*\"] }"));
}

TEST(ConfigClients, EmptyComputersTableIsRefused) {
  EXPECT_TRUE(Contains(error_of(kMacmini + client("c", "@T1@", "computers = {}")),
                       "[[client]] \"c\": `computers` is empty"));
}

TEST(ConfigClients, WildcardMixedWithNamedComputersIsRefused) {
  const std::string error = error_of(
      kMacmini + client("c", "@T1@", "computers = { \"*\" = [\"*\"], macmini = [\"a\"] }"));
  EXPECT_TRUE(Contains(error, "mixes \"*\" with computer names"));
}

TEST(ConfigClients, NamedComputerKeysFollowTheComputerNameRule) {
  const std::string error =
      error_of(kMacmini + client("c", "@T1@", "computers = { \"rpi1.local\" = [\"a\"] }"));
  EXPECT_TRUE(Contains(error, "[[client]] \"c\" `computers.rpi1.local`: "));
  EXPECT_TRUE(Contains(error, "may not contain `.`"));
  EXPECT_TRUE(Contains(error, "rpi1-local"));
}

TEST(ConfigClients, UnconfiguredComputerInGrantIsRefused) {
  const std::string error =
      error_of(kMacmini + client("c", "@T1@",
                                 "computers = { macmini = [\"a\"], macmni = [\"a\"] }\n"
                                 "default_computer = \"macmini\""));
  EXPECT_TRUE(Contains(error, "[[client]] \"c\": "));
  EXPECT_TRUE(Contains(error, "\"macmni\""));
  EXPECT_TRUE(Contains(error, "not a configured [[computer]]"));
  EXPECT_TRUE(Contains(error, "later"));
}

TEST(ConfigClients, UnconfiguredDefaultComputerIsRefused) {
  const std::string error =
      error_of(kMacmini + client("c", "@T1@",
                                 "computers = { \"*\" = [\"*\"] }\ndefault_computer = \"ghost\""));
  EXPECT_TRUE(Contains(error, "\"ghost\""));
  EXPECT_TRUE(Contains(error, "not a configured computer"));
}

TEST(ConfigClients, UnreachableDefaultComputerIsRefused) {
  const std::string error = error_of(
      kTwoComputers + kOwner +
      client("c", "@T2@", "computers = { macmini = [\"a\"] }\ndefault_computer = \"muse-vm\""));
  EXPECT_TRUE(Contains(error, "[[client]] \"c\": "));
  EXPECT_TRUE(Contains(error, "not in this caller's `computers`"));
  EXPECT_TRUE(Contains(error, "POST /mcp"));
}

TEST(ConfigClients, DefaultComputerIsCheckedForExistenceFirst) {
  const std::string error =
      error_of(kMacmini +
               client("c", "@T1@", "computers = { macmini = [\"a\"] }\ndefault_computer = \"x\""));
  EXPECT_TRUE(Contains(error, "not a configured computer"));
}

TEST(ConfigClients, WildcardCallerNeedsDefaultComputerEvenWithOneComputer) {
  const std::string error =
      error_of(kMacmini + client("c", "@T1@", "computers = { \"*\" = [\"*\"] }"));
  EXPECT_TRUE(Contains(error, "[[client]] \"c\": `default_computer` is required"));
  EXPECT_TRUE(Contains(error, "\"*\""));
}

TEST(ConfigClients, MultiComputerCallerNeedsDefaultComputer) {
  const std::string error = error_of(
      kTwoComputers + client("c", "@T1@", "computers = { macmini = [\"a\"], muse-vm = [\"b\"] }"));
  EXPECT_TRUE(Contains(error, "`default_computer` is required"));
  EXPECT_TRUE(Contains(error, "2 computers"));
}

TEST(ConfigClients, SingleComputerGrantIsTheDefault) {
  const Config config =
      parse(kTwoComputers + client("c", "@T2@", "computers = { muse-vm = [\"a\"] }") + kOwner);
  EXPECT_EQ(config.clients[0].default_computer, "muse-vm");
  EXPECT_EQ(config.clients[1].default_computer, "macmini");
}

// ---------------------------------------------------------------------------------------
// Tool lists and grants (docs/configuration.md, "Grants")

sb::config::ToolList tools_of(std::string_view list) {
  const Config config =
      parse(kMacmini + client("c", "@T1@", "computers = { macmini = " + std::string(list) + " }"));
  return *config.clients[0].grant.tools_for("macmini");
}

TEST(ConfigTools, EmptyListIsRefused) {
  EXPECT_TRUE(Contains(error_of(kMacmini + client("c", "@T1@", "computers = { macmini = [] }")),
                       "[[client]] \"c\" `computers.macmini`: `tools` is empty"));
  EXPECT_TRUE(Contains(error_of(kV1 + client("c", "@T1@", "tools = []")),
                       "[[client]] \"c\": `tools` is empty"));
  EXPECT_TRUE(Contains(
      error_of(kMacmini +
               client("c", "@T1@", "computers = { \"*\" = [] }\ndefault_computer = \"macmini\"")),
      "[[client]] \"c\" `computers.\"*\"`: `tools` is empty"));
}

TEST(ConfigTools, WildcardMixedWithNamesIsRefused) {
  EXPECT_TRUE(
      Contains(error_of(kMacmini + client("c", "@T1@", "computers = { macmini = [\"*\", \"a\"] }")),
               "mixes \"*\" with names"));
  EXPECT_TRUE(Contains(error_of(kV1 + client("c", "@T1@", "tools = [\"a\", \"*\"]")),
                       "mixes \"*\" with names"));
}

TEST(ConfigTools, StarAloneIsEveryTool) {
  const auto tools = tools_of("[\"*\"]");
  EXPECT_TRUE(tools.all);
  EXPECT_TRUE(tools.allows("anything"));
}

TEST(ConfigTools, NamesAreTrimmedAndDuplicatesCollapse) {
  const auto tools = tools_of("[\" sys_info \", \"sys_info\", \"screenshot\\t\", \"\"]");
  EXPECT_FALSE(tools.all);
  EXPECT_EQ(tools.names, (std::set<std::string, std::less<>>{"", "screenshot", "sys_info"}));
  EXPECT_TRUE(tools.allows("sys_info"));
  EXPECT_FALSE(tools.allows("mouse"));
}

TEST(ConfigGrant, ToolsForWildcardAndNamed) {
  const Config config =
      parse(kTwoComputers + kOwner + client("c", "@T2@", "computers = { macmini = [\"a\"] }"));
  const auto& wildcard = config.clients[0].grant;
  EXPECT_TRUE(wildcard.wildcard);
  ASSERT_NE(wildcard.tools_for("muse-vm"), nullptr);
  EXPECT_TRUE(wildcard.tools_for("added-later")->all);
  const auto& named = config.clients[1].grant;
  EXPECT_FALSE(named.wildcard);
  ASSERT_NE(named.tools_for("macmini"), nullptr);
  EXPECT_TRUE(named.tools_for("macmini")->allows("a"));
  EXPECT_EQ(named.tools_for("muse-vm"), nullptr);
}

// ---------------------------------------------------------------------------------------
// Pod attaches

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

// ---------------------------------------------------------------------------------------
// Paths and the control socket

TEST(ConfigPaths, TildeSlashIsExpandedWithHome) {
  const std::string top = "audit_path = \"~/state/audit.jsonl\"\n";
  EXPECT_EQ(parse(top + kMacmini + kOwner).audit_path, fs::path("/home/u/state/audit.jsonl"));
  EXPECT_EQ(parse(top + kMacmini + kOwner, "").audit_path, fs::path("state/audit.jsonl"));
  EXPECT_EQ(parse("audit_path = \"~user/a\"\n" + kMacmini + kOwner).audit_path,
            fs::path("~user/a"));
  EXPECT_EQ(parse("audit_path = \"/abs/a\"\n" + kMacmini + kOwner).audit_path, fs::path("/abs/a"));
  EXPECT_EQ(
      parse(kMacmini + pty("p", "url = \"wss://h/\"\nsecret_file = \"~/s\"\ntools = [\"*\"]"), "")
          .pods[0]
          .secret_file,
      fs::path("s"));
}

TEST(ConfigControlSocket, DefaultsToTmpByPort) {
  EXPECT_EQ(parse(kMacmini + kOwner).control_socket_path(), fs::path("/tmp/switchboard-8790.sock"));
  EXPECT_EQ(parse("listen = \"127.0.0.1:9001\"\n" + kMacmini + kOwner).control_socket_path(),
            fs::path("/tmp/switchboard-9001.sock"));
}

TEST(ConfigControlSocket, IsReadAndExpanded) {
  const Config config = parse("control_socket = \"~/run/sb.sock\"\n" + kMacmini + kOwner);
  EXPECT_EQ(config.control_socket, fs::path("/home/u/run/sb.sock"));
  EXPECT_EQ(config.control_socket_path(), fs::path("/home/u/run/sb.sock"));
}

TEST(ConfigControlSocket, EmptyOrTooLongIsRefused) {
  EXPECT_TRUE(Contains(error_of("control_socket = \"\"\n" + kMacmini + kOwner),
                       "`control_socket` is empty"));
  EXPECT_TRUE(Contains(
      error_of("control_socket = \"/" + std::string(120, 'x') + "\"\n" + kMacmini + kOwner),
      "the limit for a Unix socket path"));
  EXPECT_TRUE(Contains(error_of("control_socket = 1\n" + kMacmini + kOwner),
                       "`control_socket` must be a string"));
}

// ---------------------------------------------------------------------------------------
// Order and framing (docs/configuration.md, "Checking a file")

TEST(ConfigErrors, FirstFailureInSpecOrderWins) {
  const std::string bad_listen = "listen = \"localhost:1\"\n";
  const std::string bad_bind = "listen = \"0.0.0.0:1\"\n";
  const std::string bad_max = "max_inflight = 0\n";
  const std::string bad_timeout = "[timeouts]\ndefault_secs = 0\n";
  const std::string bad_client = client("c", "@T1@", "");
  // Each pair: a file with several faults, and the one that must be reported.
  EXPECT_TRUE(Contains(error_of("nope = 1\n" + bad_listen + kV1 + kMuse), "unknown key"));
  EXPECT_TRUE(Contains(error_of(bad_listen + bad_max + bad_timeout + kV1 + kMuse), "`listen`"));
  EXPECT_TRUE(Contains(error_of(bad_bind + bad_max + bad_timeout), "not a loopback"));
  EXPECT_TRUE(Contains(error_of(bad_max + bad_timeout + kV1 + kMuse), "`max_inflight`"));
  EXPECT_TRUE(Contains(error_of(bad_timeout + kV1 + kMuse), "`default_secs`"));
  EXPECT_TRUE(Contains(error_of("[vm]\nsecret_sha256 = \"x\"\n" + kMuse), "[vm] and [[computer]]"));
  EXPECT_TRUE(Contains(error_of(computer("a.b", "@C1@") + bad_client), "may not contain"));
  EXPECT_TRUE(Contains(error_of(bad_client), "nothing to relay to"));
  EXPECT_TRUE(Contains(error_of(kMacmini + bad_client +
                                pty("p",
                                    "url = \"x\"\nsecret_file = "
                                    "\"x\"\ntools = [\"*\"]")),
                       "no `computers`"));
}

TEST(ConfigErrors, ParseConfigHasNoFilePrefix) {
  const std::string error = error_of(kMacmini + client("c", "@T1@", ""));
  EXPECT_EQ(error.rfind("[[client]] \"c\": no `computers`", 0), 0u) << error;
}

TEST(ConfigErrors, LoadFilePrefixesThePath) {
  TempDir dir;
  const fs::path path = dir.write("bad.toml", fill(kMacmini + client("c", "@T1@", "")));
  try {
    sb::config::load_config_file(path, kHome);
    FAIL() << "accepted";
  } catch (const ConfigError& error) {
    const std::string what = error.what();
    EXPECT_EQ(what.rfind("in " + path.string() + ": [[client]] \"c\": no `computers`", 0), 0u)
        << what;
  }
}

TEST(ConfigErrors, UnreadableFileSaysReading) {
  TempDir dir;
  const fs::path path = dir.path() / "absent.toml";
  try {
    sb::config::load_config_file(path, kHome);
    FAIL() << "accepted";
  } catch (const ConfigError& error) {
    const std::string what = error.what();
    EXPECT_EQ(what.rfind("reading " + path.string() + ": ", 0), 0u) << what;
    EXPECT_TRUE(Contains(what, "No such file or directory"));
  }
}

TEST(ConfigErrors, LoadFileReadsAGoodFile) {
  TempDir dir;
  const fs::path path = dir.write("good.toml", fill(kMacmini + kOwner));
  EXPECT_EQ(sb::config::load_config_file(path, kHome).computers.size(), 1u);
}

// ---------------------------------------------------------------------------------------
// Derived sets (docs/configuration.md, "Derived settings")

TEST(ConfigDerived, WildcardClientsInConfigOrder) {
  const Config config =
      parse(kMacmini +
            client("z", "@T1@", "computers = { \"*\" = [\"a\"] }\ndefault_computer = \"macmini\"") +
            client("m", "@T2@", "computers = { macmini = [\"*\"] }") +
            client("a", "@T3@", "computers = { \"*\" = [\"*\"] }\ndefault_computer = \"macmini\""));
  EXPECT_EQ(config.wildcard_clients(), (std::vector<std::string>{"z", "a"}));
}

TEST(ConfigDerived, UnusedComputers) {
  const std::string third = computer("rpi", "@C3@");
  // Named grants only: the computers no principal names.
  const Config named =
      parse(kTwoComputers + third + client("c", "@T1@", "computers = { muse-vm = [\"a\"] }"));
  EXPECT_EQ(named.unused_computers(), (std::vector<std::string>{"macmini", "rpi"}));
  // A pod counts as naming its computer.
  const Config with_attach =
      parse(kTwoComputers + third + client("c", "@T1@", "computers = { muse-vm = [\"a\"] }") +
            pty("p", kPodBody + "computer = \"rpi\""));
  EXPECT_EQ(with_attach.unused_computers(), (std::vector<std::string>{"macmini"}));
  // Any wildcard grant uses every computer.
  const Config wildcard = parse(kTwoComputers + third + kOwner);
  EXPECT_TRUE(wildcard.unused_computers().empty());
  // A v1 `tools` client names `default`.
  EXPECT_TRUE(parse(kV1 + client("c", "@T1@", "tools = [\"a\"]")).unused_computers().empty());
}

TEST(ConfigDerived, FindComputer) {
  const Config config = parse(kTwoComputers + kOwner);
  ASSERT_NE(config.find_computer("muse-vm"), nullptr);
  EXPECT_EQ(config.find_computer("muse-vm")->secret, sb::verifier_of("computer-2"));
  EXPECT_EQ(config.find_computer("nope"), nullptr);
}

// ---------------------------------------------------------------------------------------
// A full v2 example

TEST(ConfigExample, SpecExampleParses) {
  const Config config = parse(R"(listen = "127.0.0.1:8790"
max_inflight = 8
audit_args = true
# audit_path = "~/.local/state/openab-sb/audit.jsonl"

[[computer]]
name = "macmini"
secret_sha256 = "@C1@"

[[computer]]
name = "muse-vm"
secret_sha256 = "@C2@"
max_inflight = 4

[timeouts]
default_secs = 60
control_secs = 15
[timeouts.tools]
screenshot = 10
bash = 60

[[client]]
name = "connect"
token_sha256 = "@T1@"
default_computer = "macmini"
computers = { macmini = ["sys_info", "screenshot", "mouse", "key"], muse-vm = ["sys_info"] }

[[client]]
name = "agent"
token_sha256 = "@T2@"
default_computer = "macmini"
computers = { "*" = ["*"] }
)");
  EXPECT_EQ(config.computers.size(), 2u);
  EXPECT_EQ(config.clients.size(), 2u);
  EXPECT_EQ(config.wildcard_clients(), std::vector<std::string>{"agent"});
  EXPECT_TRUE(config.unused_computers().empty());
  EXPECT_EQ(config.timeouts.for_tool("bash"), 60);
  EXPECT_EQ(config.computers[1].max_inflight, 4);
  EXPECT_EQ(config.clients[0].grant.named.size(), 2u);
}

// The shipped example, once its placeholders are replaced with real verifiers, is valid.
std::string filled_example() {
  std::ifstream file(fs::path(SWITCHBOARD_SOURCE_DIR) / "packaging/switchboard.toml.example");
  std::stringstream buffer;
  buffer << file.rdbuf();
  std::string text = buffer.str();
  const std::string placeholder = "sha256:REPLACE_WITH_VERIFIER";
  int n = 0;
  for (auto at = text.find(placeholder); at != std::string::npos; at = text.find(placeholder)) {
    text.replace(at, placeholder.size(), verifier("example-" + std::to_string(++n)));
  }
  return text;
}

TEST(ConfigExample, ShippedExampleIsValidOnceFilledIn) {
  const std::string text = filled_example();
  ASSERT_FALSE(text.empty());
  ASSERT_EQ(text.find("REPLACE_WITH"), std::string::npos);
  const Config config = sb::config::parse_config(text, kHome);
  EXPECT_FALSE(config.v1_form);
  EXPECT_EQ(config.computers.size(), 2u);
  EXPECT_EQ(config.clients.size(), 2u);
  EXPECT_TRUE(config.unused_computers().empty());
  const auto report = sb::config::check_report(config);
  EXPECT_EQ(report.summary,
            "ok: listen 127.0.0.1:8790, 2 computer(s), 2 client(s), 0 pty attach(es)");
}

TEST(ConfigExample, ShippedExampleIsRefusedWithPlaceholders) {
  std::ifstream file(fs::path(SWITCHBOARD_SOURCE_DIR) / "packaging/switchboard.toml.example");
  std::stringstream buffer;
  buffer << file.rdbuf();
  EXPECT_THROW(sb::config::parse_config(buffer.str(), kHome), ConfigError);
}

// ---------------------------------------------------------------------------------------
// check_report (docs/configuration.md, "Checking a file")

TEST(CheckReport, SummaryWithoutWarnings) {
  const auto report = sb::config::check_report(parse(kTwoComputers + kOwner));
  EXPECT_EQ(report.summary,
            "ok: listen 127.0.0.1:8790, 2 computer(s), 1 client(s), 0 pty attach(es)");
  // The wildcard note is printed but is not a warning.
  ASSERT_EQ(report.stderr_lines.size(), 1u);
  EXPECT_EQ(report.stderr_lines[0].rfind("note: [[client]] \"owner\" ", 0), 0u);
  EXPECT_TRUE(Contains(report.stderr_lines[0], "every computer"));
}

TEST(CheckReport, WarnsAboutUnusedComputers) {
  const auto report =
      sb::config::check_report(parse("listen = \"[::1]:8790\"\n" + kTwoComputers +
                                     client("c", "@T1@", "computers = { macmini = [\"a\"] }")));
  ASSERT_EQ(report.stderr_lines.size(), 1u);
  EXPECT_EQ(report.stderr_lines[0].rfind("warning: [[computer]] \"muse-vm\": ", 0), 0u);
  EXPECT_TRUE(Contains(report.stderr_lines[0], "no [[client]] and no [[pty_attach]]"));
  EXPECT_EQ(report.summary,
            "ok: listen [::1]:8790, 2 computer(s), 1 client(s), 0 pty attach(es), 1 warning(s)");
}

TEST(CheckReport, WarnsAboutUnreadableOrEmptySecretFiles) {
  TempDir dir;
  const fs::path good = dir.write("good.secret", "abcdef\n");
  const fs::path blank = dir.write("blank.secret", " \n\t\n");
  const fs::path missing = dir.path() / "missing.secret";
  const auto attach = [](std::string_view name, const fs::path& secret) {
    return pty(name, "url = \"wss://h/" + std::string(name) + "\"\nsecret_file = \"" +
                         secret.string() + "\"\ntools = [\"*\"]");
  };
  const auto report = sb::config::check_report(
      parse(kMacmini + attach("good", good) + attach("blank", blank) + attach("missing", missing)));
  ASSERT_EQ(report.stderr_lines.size(), 2u);
  EXPECT_EQ(report.stderr_lines[0].rfind("warning: [[pty_attach]] \"blank\": ", 0), 0u);
  EXPECT_TRUE(Contains(report.stderr_lines[0], blank.string()));
  EXPECT_TRUE(Contains(report.stderr_lines[0], "is empty"));
  EXPECT_EQ(report.stderr_lines[1].rfind("warning: [[pty_attach]] \"missing\": ", 0), 0u);
  EXPECT_TRUE(Contains(report.stderr_lines[1], missing.string()));
  EXPECT_TRUE(Contains(report.stderr_lines[1], "No such file or directory"));
  EXPECT_EQ(
      report.summary,
      "ok: listen 127.0.0.1:8790, 1 computer(s), 0 client(s), 3 pty attach(es), 2 warning(s)");
}

TEST(CheckReport, LinesComeInSpecOrder) {
  TempDir dir;
  const auto report = sb::config::check_report(
      parse(kTwoComputers + client("c", "@T1@", "computers = { macmini = [\"a\"] }") +
            pty("p", "url = \"wss://h/\"\nsecret_file = \"" + (dir.path() / "none").string() +
                         "\"\ntools = [\"*\"]\ncomputer = \"macmini\"")));
  ASSERT_EQ(report.stderr_lines.size(), 2u);
  EXPECT_TRUE(Contains(report.stderr_lines[0], "[[computer]] \"muse-vm\""));
  EXPECT_TRUE(Contains(report.stderr_lines[1], "[[pty_attach]] \"p\""));
  EXPECT_TRUE(Contains(report.summary, ", 2 warning(s)"));
}

// ---------------------------------------------------------------------------------------
// The command line, run as a separate process

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string shell_quote(std::string_view text) {
  std::string out = "'";
  for (const char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out.push_back(c);
    }
  }
  return out + "'";
}

std::string read_file(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream buffer;
  buffer << file.rdbuf();
  return buffer.str();
}

// Runs `switchboard <args>` with `input` on stdin; stdout and stderr are kept apart.
RunResult run_switchboard(const TempDir& dir, std::string_view args, std::string_view input = "") {
  const fs::path in = dir.write("stdin.txt", input);
  const fs::path err = dir.path() / "stderr.txt";
  const std::string command = shell_quote(SWITCHBOARD_BINARY) + " " + std::string(args) + " <" +
                              shell_quote(in.string()) + " 2>" + shell_quote(err.string());
  RunResult result;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return result;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) {
    result.out.append(buffer, n);
  }
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.err = read_file(err);
  return result;
}

TEST(Cli, CheckGoodFilePrintsTheSummary) {
  TempDir dir;
  const fs::path path = dir.write("good.toml", fill(kTwoComputers + kOwner));
  const RunResult result = run_switchboard(dir, "check -c " + shell_quote(path.string()));
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out,
            "ok: listen 127.0.0.1:8790, 2 computer(s), 1 client(s), 0 pty attach(es)\n");
  EXPECT_TRUE(Contains(result.err, "note: [[client]] \"owner\""));
}

TEST(Cli, CheckWithWarningsStillExitsZero) {
  TempDir dir;
  const fs::path path = dir.write(
      "warn.toml", fill(kTwoComputers + client("c", "@T1@", "computers = { macmini = [\"a\"] }")));
  const RunResult result = run_switchboard(dir, "check --config " + shell_quote(path.string()));
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_TRUE(Contains(result.err, "warning: [[computer]] \"muse-vm\""));
  EXPECT_TRUE(Contains(result.out, ", 1 warning(s)\n"));
}

TEST(Cli, CheckBadFileExitsOneWithTheReason) {
  TempDir dir;
  const fs::path path = dir.write("bad.toml", fill(kV1 + kMuse + kOwner));
  const RunResult result = run_switchboard(dir, "check -c " + shell_quote(path.string()));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_TRUE(result.out.empty()) << result.out;
  EXPECT_TRUE(Contains(result.err, "in " + path.string()));
  EXPECT_TRUE(Contains(result.err, "[vm] and [[computer]]"));
}

TEST(Cli, CheckMissingFileExitsOne) {
  TempDir dir;
  const RunResult result =
      run_switchboard(dir, "check -c " + shell_quote((dir.path() / "none.toml").string()));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_TRUE(Contains(result.err, "reading "));
}

TEST(Cli, GenSecretPrintsASecretAndItsVerifier) {
  TempDir dir;
  const RunResult result = run_switchboard(dir, "gen-secret");
  EXPECT_EQ(result.exit_code, 0);
  std::smatch match;
  const std::regex format("secret:   ([0-9a-f]{64})\nverifier: (sha256:[0-9a-f]{64})\n");
  ASSERT_TRUE(std::regex_match(result.out, match, format)) << result.out;
  const std::string secret = match[1];
  const std::string printed = match[2];
  // The verifier is of the 64 hex characters, not of the raw bytes.
  EXPECT_EQ(printed, verifier(secret));
  const RunResult hashed = run_switchboard(dir, "hash", secret + "\n");
  EXPECT_EQ(hashed.out, printed + "\n");
}

TEST(Cli, HashTrimsStdin) {
  TempDir dir;
  const RunResult result = run_switchboard(dir, "hash", "  \tabc \r\n\n");
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.out, verifier("abc") + "\n");
}

TEST(Cli, VersionPrintsTheProgramAndVersion) {
  TempDir dir;
  for (const char* flag : {"--version", "-V"}) {
    const RunResult result = run_switchboard(dir, flag);
    EXPECT_EQ(result.exit_code, 0);
    EXPECT_EQ(result.out, std::string("switchboard ") + SWITCHBOARD_VERSION + "\n");
  }
}

TEST(Cli, UsageErrorsExitTwo) {
  TempDir dir;
  EXPECT_EQ(run_switchboard(dir, "frobnicate").exit_code, 2);
  EXPECT_EQ(run_switchboard(dir, "").exit_code, 2);
  EXPECT_EQ(run_switchboard(dir, "check --bogus").exit_code, 2);
  EXPECT_EQ(run_switchboard(dir, "check -c").exit_code, 2);
}

}  // namespace
