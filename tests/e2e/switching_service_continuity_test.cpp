// End to end: the switchboard as a service with a file descriptor store
// (docs/architecture.md, "Switching"), under the harness's stand-in for systemd: a restart
// hands everything over through the store and carries calls in flight; a crash of the
// supervisor keeps every computer attached and costs only the calls in flight; a stop
// closes every computer with 1001 and leaves the store empty.
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>

#include "shared/verifier.hpp"
#include "tests/e2e/fidelity_helpers.hpp"

namespace sbtest {
namespace {

// The names the store holds them under (docs/architecture.md, "Switching"): 12 hex digits
// of the computer name's SHA-256.
std::string key(const std::string& computer) {
  return sb::render_verifier(sb::verifier_of(computer)).substr(7, 12);
}

class UnderServiceManager : public TwoComputersTest {
 protected:
  static bool stores(const SwitchboardProcess& sb, const std::string& name) {
    const auto names = const_cast<SwitchboardProcess&>(sb).service_manager().stored();
    return std::find(names.begin(), names.end(), name) != names.end();
  }

  static bool stores_any_starting(SwitchboardProcess& sb, const std::string& prefix) {
    const auto names = sb.service_manager().stored();
    return std::any_of(names.begin(), names.end(),
                       [&](const std::string& name) { return name.starts_with(prefix); });
  }

  json wait_restarted(SwitchboardProcess& sb) {
    const auto line = sb.audit().wait_for("service_restarted", {}, std::chrono::seconds(20));
    EXPECT_TRUE(line) << sb.diagnostics();
    return line.value_or(json());
  }
};

TEST_F(UnderServiceManager, TheListenersComputersAndRecordFilesWaitInTheStore) {
  SwitchboardProcess sb(config(), SwitchboardProcess::UnderServiceManager{});
  auto alpha = attach_alpha(sb);
  ASSERT_TRUE(alpha);
  EXPECT_TRUE(eventually([&] {
    return stores(sb, "listen-http") && stores(sb, "listen-control") &&
           stores(sb, "c-" + key("alpha") + "-1") && stores(sb, "r-" + key("alpha")) &&
           stores(sb, "r-" + key("beta"));
  })) << ::testing::PrintToString(sb.service_manager().stored());
  // A session that ends leaves the store.
  alpha->close(1000);
  EXPECT_TRUE(eventually([&] { return !stores(sb, "c-" + key("alpha") + "-1"); }));
}

TEST_F(UnderServiceManager, ARestartKeepsComputersAttachedAndCarriesACallInFlight) {
  SwitchboardProcess sb(config(), SwitchboardProcess::UnderServiceManager{});
  auto alpha = attach_alpha(sb);
  auto beta = attach_beta(sb);
  ASSERT_TRUE(alpha && beta);
  CallInFlight pending(sb.port(), "/mcp", owner_.secret, "echo", hold(1), "crossing");
  ASSERT_TRUE(alpha->wait_for_calls(1));
  const pid_t before = sb.pid();

  sb.service_restart();
  EXPECT_NE(sb.pid(), before);
  const json restarted = wait_restarted(sb);
  EXPECT_EQ(restarted["resumed"], 2);
  EXPECT_EQ(restarted["redialled"], 0);
  alpha->answer_echo(call_with_arguments(*alpha, hold(1)));
  const json reply = pending.wait();
  EXPECT_EQ(reply["id"], "crossing");
  EXPECT_EQ(echoed(reply), hold(1));
  EXPECT_FALSE(alpha->closed());
  EXPECT_FALSE(beta->closed());
  EXPECT_EQ(alpha->requests("initialize").size(), 1u);
  EXPECT_EQ(sb.audit().count("vm_detach"), 0u);
  // What only crossed leaves the store; the computers' sockets stay.
  EXPECT_TRUE(eventually([&] { return !stores(sb, "state") && !stores_any_starting(sb, "h-"); }))
      << ::testing::PrintToString(sb.service_manager().stored());
  EXPECT_TRUE(stores(sb, "c-" + key("alpha") + "-1"));
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp/beta", owner_.secret, "echo", json{{"n", 2}})),
            (json{{"n", 2}}));
}

class ACrash : public UnderServiceManager, public ::testing::WithParamInterface<int> {};

TEST_P(ACrash, KeepsEveryComputerAttachedAndCancelsOnlyTheCallsInFlight) {
  SwitchboardProcess sb(config(), SwitchboardProcess::UnderServiceManager{});
  auto alpha = attach_alpha(sb);
  auto beta = attach_beta(sb);
  ASSERT_TRUE(alpha && beta);
  HttpConnection caller(sb.port());
  caller.send(post("/mcp/alpha", owner_.secret, tool_call("lost", "echo", hold(1))));
  const json seen = computer_call(*alpha, hold(1));
  ASSERT_FALSE(seen.is_null());

  sb.service_crash(GetParam());
  const json restarted = wait_restarted(sb);
  EXPECT_EQ(restarted["resumed"], 2);
  EXPECT_EQ(restarted["old_build"], "unknown");
  // The caller's connection died with the process; its call is cancelled at the computer,
  // and the computer's late reply reaches no one.
  EXPECT_THROW(caller.read_response(std::chrono::seconds(5)), std::exception);
  EXPECT_FALSE(wait_cancel(*alpha, seen["id"]).is_null()) << "the lost call was not cancelled";
  alpha->answer_echo(seen);
  // Nothing closed, nothing handshaken again; the sessions go on with their generations.
  EXPECT_FALSE(alpha->closed());
  EXPECT_FALSE(beta->closed());
  EXPECT_EQ(alpha->requests("initialize").size(), 1u);
  EXPECT_EQ(sb.audit().count("vm_resumed", fields_equal({{"generation", 1}})), 2u);
  const json next = call_tool(sb.port(), "/mcp/alpha", owner_.secret, "echo", json{{"n", 2}});
  EXPECT_EQ(echoed(next), (json{{"n", 2}})) << next;
  const auto calls = alpha->calls();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_GT(calls[1]["id"].get<std::uint64_t>(), calls[0]["id"].get<std::uint64_t>())
      << "an id on the computer's socket was used again";
}

// A record damaged while no supervisor runs costs its own computer a redial, and nothing
// else: the other computer's session is taken up as usual.
TEST_F(UnderServiceManager, ARecordDamagedAfterACrashCostsOnlyItsComputerARedial) {
  SwitchboardProcess sb(config(), SwitchboardProcess::UnderServiceManager{});
  auto alpha = attach_alpha(sb);
  auto beta = attach_beta(sb);
  ASSERT_TRUE(alpha && beta);
  bool damaged = false;
  sb.service_crash(SIGKILL, [&] {
    // Its size, then bytes that are no record of any version.
    damaged = sb.service_manager().overwrite_stored("r-" + key("alpha"),
                                                    std::string(8, '\0') + "garbage!");
  });
  ASSERT_TRUE(damaged);
  const json restarted = wait_restarted(sb);
  EXPECT_EQ(restarted["resumed"], 1);
  const auto closed = alpha->wait_closed();
  ASSERT_TRUE(closed) << "a computer whose record is damaged was left half-alive";
  EXPECT_FALSE(beta->closed());
  // Its vm_attach, written before the crash, gets its one vm_detach.
  EXPECT_EQ(sb.audit().count("vm_detach", fields_equal({{"computer", "alpha"}, {"generation", 1}})),
            1u);
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp/beta", owner_.secret, "echo", json{{"n", 1}})),
            (json{{"n", 1}}));
  // alpha dials again, as after any drop, and is served.
  auto again = attach_alpha(sb);
  ASSERT_TRUE(again);
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp/alpha", owner_.secret, "echo", json{{"n", 2}})),
            (json{{"n", 2}}));
}

INSTANTIATE_TEST_SUITE_P(OfTheSupervisor, ACrash, ::testing::Values(SIGKILL, SIGSEGV),
                         [](const auto& info) { return info.param == SIGKILL ? "kill" : "segv"; });

TEST_F(UnderServiceManager, AStopClosesEveryComputerWith1001AndEmptiesTheStore) {
  SwitchboardProcess sb(config(), SwitchboardProcess::UnderServiceManager{});
  auto alpha = attach_alpha(sb);
  ASSERT_TRUE(alpha);
  sb.stop();
  const auto closed = alpha->wait_closed();
  ASSERT_TRUE(closed);
  EXPECT_EQ(closed->code, 1001);
  EXPECT_TRUE(sb.service_manager().stored().empty());
}

}  // namespace
}  // namespace sbtest
