// The top-level settings (docs/configuration.md, "Top level"): listeners, in-flight caps,
// the audit, timeouts, limits, paths and the control socket.
#include "supervisor/config/config.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "tests/unit/supervisor/config/config_test_support.hpp"

namespace sb::config::test {
namespace {

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
  EXPECT_EQ(config.limits.max_worker_buffer_bytes, 64ull << 20);
  EXPECT_EQ(config.limits.audit_unrelayed_per_minute, 20);
  EXPECT_TRUE(config.trust_peer_headers);
}

TEST(ConfigLimits, ValuesAreTakenAndOutOfRangeOnesRefused) {
  const Config config = parse(
      "trust_peer_headers = false\n[limits]\nmax_connections = 100\nmax_request_bytes = "
      "4096\nmax_reply_buffer_mib = 64\nmax_worker_buffer_mib = 3\naudit_unrelayed_per_minute = "
      "0\n" +
      kMacmini + kOwner);
  EXPECT_EQ(config.limits.max_connections, 100);
  EXPECT_EQ(config.limits.max_request_bytes, 4096u);
  EXPECT_EQ(config.limits.max_reply_buffer_bytes, 64ull << 20);
  EXPECT_EQ(config.limits.max_worker_buffer_bytes, 3ull << 20);
  EXPECT_EQ(config.limits.audit_unrelayed_per_minute, 0);
  EXPECT_FALSE(config.trust_peer_headers);
  const std::vector<std::pair<std::string, std::string>> cases{
      {"[limits]\nmax_connections = 0\n", "`max_connections` must be 8..="},
      {"[limits]\nmax_request_bytes = 10\n", "`max_request_bytes` must be 1024..="},
      // A reply may be 16 MiB: a smaller budget could never hold one.
      {"[limits]\nmax_reply_buffer_mib = 15\n", "`max_reply_buffer_mib` must be 16..="},
      {"[limits]\nmax_worker_buffer_mib = 0\n", "`max_worker_buffer_mib` must be 1..=1048576"},
      {"[limits]\naudit_unrelayed_per_minute = -1\n",
       "`audit_unrelayed_per_minute` must be 0..=1000000"},
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

}  // namespace
}  // namespace sb::config::test
