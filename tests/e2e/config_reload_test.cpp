// End to end: what a reload (SIGHUP) changes and when (docs/configuration.md, "Reload"):
// per-caller caps from the next call, a computer's max_inflight from its next attach,
// timeouts and audit_args live, tracing started, moved and stopped, and a failed reload
// changes nothing and says why.
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <sstream>

#include "harness/fixed_http_origin.hpp"
#include "tests/e2e/e2e_helpers.hpp"

namespace sbtest {
namespace {

class Reload : public ::testing::Test {
 protected:
  Secret alpha_ = new_secret();
  Secret owner_ = new_secret();
  Secret alice_ = new_secret();

  ConfigBuilder config(std::optional<int> alpha_max = {}, std::optional<int> alice_max = {},
                       int slow_secs = 1) const {
    ConfigBuilder builder;
    builder.timeouts(20, 5, {{"slow", slow_secs}})
        .computer("alpha", alpha_, alpha_max)
        .client("owner", owner_, R"({ "*" = ["*"] })", "alpha")
        .client("alice", alice_, R"({ alpha = ["echo", "slow"] })", std::nullopt, alice_max);
    return builder;
  }
};

TEST_F(Reload, APerCallerCapAppliesFromTheCallersNextCall) {
  SwitchboardProcess sb(config(8, /*alice_max=*/1));
  auto fake = attach_ready(sb, alpha_, "alpha", owner_.secret);
  ASSERT_TRUE(fake);
  CallInFlight first(sb.port(), "/mcp", alice_.secret, "echo", hold(1));
  ASSERT_TRUE(fake->wait_for_calls(1));
  EXPECT_EQ(error_code(call_tool(sb.port(), "/mcp", alice_.secret, "echo", hold(2))), kOverloaded);

  sb.reload(config(8, /*alice_max=*/2));
  CallInFlight second(sb.port(), "/mcp", alice_.secret, "echo", hold(3));
  ASSERT_TRUE(fake->wait_for_calls(2)) << "the raised cap did not apply";
  EXPECT_EQ(error_code(call_tool(sb.port(), "/mcp", alice_.secret, "echo", hold(4))), kOverloaded);
  EXPECT_FALSE(fake->closed());
  for (const auto& call : fake->calls()) fake->answer_echo(call);
  EXPECT_EQ(echoed(first.wait()), hold(1));
  EXPECT_EQ(echoed(second.wait()), hold(3));
}

TEST_F(Reload, ARotatedClientTokenAppliesFromTheNextRequestAndInFlightCallsFinish) {
  SwitchboardProcess sb(config());
  auto fake = attach_ready(sb, alpha_, "alpha", owner_.secret);
  ASSERT_TRUE(fake);
  CallInFlight pending(sb.port(), "/mcp", alice_.secret, "echo", hold(1), "old");
  ASSERT_TRUE(fake->wait_for_calls(1));
  const Secret old_token = alice_;
  alice_ = new_secret();
  sb.reload(config());
  EXPECT_EQ(post_mcp(sb.port(), "/mcp", old_token.secret, rpc(1, "ping")).status, 401);
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp", alice_.secret, "echo", json{{"n", 1}})),
            (json{{"n", 1}}));
  // The call made under the old token runs to completion.
  fake->answer_echo(call_with_arguments(*fake, hold(1)));
  const json finished = pending.wait();
  EXPECT_EQ(finished["id"], "old");
  EXPECT_EQ(echoed(finished), hold(1));
}

TEST_F(Reload, AComputersMaxInflightAppliesFromItsNextAttach) {
  SwitchboardProcess sb(config(/*alpha_max=*/2));
  auto fake = attach_ready(sb, alpha_, "alpha", owner_.secret);
  ASSERT_TRUE(fake);
  auto max_in_flight = [&] {
    const json status = http_get(sb.port(), "/status", owner_.secret).json();
    return status["vm"]["max_in_flight"];
  };
  EXPECT_EQ(max_in_flight(), 2);

  sb.reload(config(/*alpha_max=*/6));
  EXPECT_EQ(max_in_flight(), 2) << "the live socket keeps the value it attached with";
  EXPECT_FALSE(fake->closed());

  auto successor = attach_ready(sb, alpha_, "alpha", owner_.secret);
  ASSERT_TRUE(successor);
  EXPECT_EQ(max_in_flight(), 6);
  EXPECT_EQ(sb.worker("alpha")["max_in_flight"], 6);
}

TEST_F(Reload, TimeoutsApplyFromTheNextRequest) {
  SwitchboardProcess sb(config(8, std::nullopt, /*slow_secs=*/1));
  auto fake = attach_ready(sb, alpha_, "alpha", owner_.secret);
  ASSERT_TRUE(fake);
  sb.reload(config(8, std::nullopt, /*slow_secs=*/2));
  const auto started = Clock::now();
  const json reply = call_tool(sb.port(), "/mcp", alice_.secret, "slow", hold(1));
  EXPECT_EQ(error_code(reply), kTimeout) << reply;
  EXPECT_GE(elapsed_since(started), 1800ms) << "timeouts apply live";
  EXPECT_LT(elapsed_since(started), 4500ms);
}

TEST_F(Reload, AuditArgsApplyFromTheNextRequest) {
  SwitchboardProcess sb(config());
  auto fake = attach_ready(sb, alpha_, "alpha", owner_.secret);
  ASSERT_TRUE(fake);
  call_tool(sb.port(), "/mcp", alice_.secret, "echo", json{{"n", 1}});
  sb.reload(config().set("audit_args", "false"));
  call_tool(sb.port(), "/mcp", alice_.secret, "echo", json{{"n", 2}});
  ASSERT_TRUE(sb.audit().wait_for_count("call", 2));
  const auto calls = sb.audit().events("call");
  EXPECT_EQ(calls[0]["args"], R"({"n":1})");
  EXPECT_TRUE(calls[1]["args"].is_null()) << calls[1];
}

// [telemetry] (docs/observability.md) applies from the next request: spans go to the
// collector a reload names, and the computer is given a traceparent only while tracing.
TEST_F(Reload, TracingStartsMovesAndStopsWithAReload) {
  const harness::FixedHttpOrigin first("{}");
  const harness::FixedHttpOrigin second("{}");
  const auto tracing_to = [&](const harness::FixedHttpOrigin& collector) {
    return config().block("[telemetry]\nendpoint = " + json(collector.url("")).dump() +
                          "\nbatch_delay_ms = 10\n");
  };
  SwitchboardProcess sb(config());
  auto fake = attach_ready(sb, alpha_, "alpha", owner_.secret);
  ASSERT_TRUE(fake);
  // The params the computer got for a call `n` of alice's.
  const auto call = [&](int n) {
    EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp", alice_.secret, "echo", json{{"n", n}})),
              json({{"n", n}}));
    return fake->calls().back()["params"];
  };
  EXPECT_FALSE(call(1).contains("_meta")) << "no tracing, no traceparent";

  sb.reload(tracing_to(first));
  EXPECT_TRUE(call(2)["_meta"].contains("traceparent"));
  EXPECT_TRUE(eventually([&] { return first.answered() > 0; })) << "no span at the collector";

  sb.reload(tracing_to(second));
  const std::string traceparent = call(3)["_meta"]["traceparent"];
  ASSERT_TRUE(eventually([&] { return second.answered() > 0; })) << "no span at the new one";
  EXPECT_NE(second.last_request().find(traceparent.substr(3, 32)), std::string::npos)
      << "the call's trace at the collector the reload named";

  sb.reload(config());
  EXPECT_FALSE(call(4).contains("_meta")) << "tracing off again";
}

TEST_F(Reload, AnInvalidConfigChangesNothingAndTheLogSaysWhy) {
  SwitchboardProcess sb(config());
  auto fake = attach_ready(sb, alpha_, "alpha", owner_.secret);
  ASSERT_TRUE(fake);
  // Removing alpha while alice still names it is refused (docs/configuration.md, "Reload").
  const Secret beta = new_secret();
  sb.write_config(ConfigBuilder()
                      .computer("beta", beta)
                      .client("owner", owner_, R"({ "*" = ["*"] })", "beta")
                      .client("alice", alice_, R"({ alpha = ["echo"] })"));
  sb.send_signal(SIGHUP);
  ASSERT_TRUE(eventually([&] {
    return sb.stderr_text().find("reload failed") != std::string::npos;
  })) << sb.stderr_text();
  const std::string log = sb.stderr_text();
  EXPECT_NE(log.find("not a configured"), std::string::npos)
      << "a failed reload logs its reason: " << log;
  // ...the same text `check` prints for that file.
  const auto check = sb.run_cli({"check"});
  EXPECT_EQ(check.exit_code, 1);
  const std::string prefix = "Error: ";
  ASSERT_EQ(check.err.rfind(prefix, 0), 0u) << check.err;
  const std::string reason = check.err.substr(prefix.size(), check.err.find('\n') - prefix.size());
  EXPECT_NE(log.find(reason), std::string::npos) << "check says: " << reason << "\nlog: " << log;
  EXPECT_EQ(sb.audit().count("config_reloaded"), 0u);
  EXPECT_EQ(sb.audit().count("vm_revoked"), 0u);
  EXPECT_FALSE(fake->closed());
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp", alice_.secret, "echo", json{{"n", 1}})),
            (json{{"n", 1}}));
  FakeComputer newcomer(sb.port(), FakeComputerOptions{.secret = beta.secret});
  EXPECT_EQ(newcomer.attach(), 401) << "beta is not configured";
}

TEST_F(Reload, SettingsThatNeedARestartAreWarnedAboutAndNotApplied) {
  SwitchboardProcess sb(config());
  auto fake = attach_ready(sb, alpha_, "alpha", owner_.secret);
  ASSERT_TRUE(fake);
  const int other_port = free_port();
  {
    // Written by hand: listen, audit_path and control_socket all change.
    std::ofstream out(sb.config_path(), std::ios::trunc);
    out << "listen = \"127.0.0.1:" << other_port << "\"\naudit_path = \""
        << (sb.dir() / "other-audit.jsonl").string() << "\"\ncontrol_socket = \""
        << (sb.dir() / "other.sock").string() << "\"\n"
        << config().toml();
  }
  sb.send_signal(SIGHUP);
  // The audit file is not reopened: the reload is recorded in the old one.
  ASSERT_TRUE(sb.audit().wait_for("config_reloaded"));
  const std::string log = sb.stderr_text();
  std::vector<std::string> warnings;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    if (line.find(" WARN ") != std::string::npos) warnings.push_back(line);
  }
  for (const char* key : {"`listen`", "`audit_path`"}) {
    EXPECT_EQ(
        std::count_if(warnings.begin(), warnings.end(),
                      [&](const std::string& line) { return line.find(key) != std::string::npos; }),
        1)
        << key << " not warned about exactly once:\n"
        << log;
  }
  EXPECT_EQ(http_get(sb.port(), "/healthz").status, 200) << "listen moved without a restart";
  EXPECT_THROW(http_get(other_port, "/healthz"), std::exception);
  EXPECT_FALSE(fs::exists(sb.dir() / "other-audit.jsonl"));
  EXPECT_FALSE(fake->closed());
}

TEST_F(Reload, RemovingAComputerFailsItsCallsInFlightWith32004) {
  const Secret beta = new_secret();
  auto two = [&] {
    return ConfigBuilder()
        .computer("alpha", alpha_)
        .computer("beta", beta)
        .client("owner", owner_, R"({ "*" = ["*"] })", "beta");
  };
  SwitchboardProcess sb(two());
  auto fake = attach_ready(sb, alpha_, "alpha", owner_.secret);
  ASSERT_TRUE(fake);
  CallInFlight pending(sb.port(), "/mcp/alpha", owner_.secret, "echo", hold(1), "gone");
  ASSERT_TRUE(fake->wait_for_calls(1));
  sb.reload(
      ConfigBuilder().computer("beta", beta).client("owner", owner_, R"({ "*" = ["*"] })", "beta"));
  const json lost = pending.wait();
  EXPECT_EQ(error_code(lost), kDisconnected) << lost;
  EXPECT_EQ(lost["id"], "gone");
  const auto closed = fake->wait_closed();
  ASSERT_TRUE(closed);
  EXPECT_EQ(closed->code, 4003);
  // Its worker is gone from `switchboard workers`.
  EXPECT_TRUE(eventually([&] { return sb.workers().size() == 1; }));
  EXPECT_EQ(sb.workers()[0]["computer"], "beta");
}

}  // namespace
}  // namespace sbtest
