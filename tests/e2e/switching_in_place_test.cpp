// End to end: switching in place (docs/architecture.md, "Switching"). SIGUSR2 and
// `switchboard upgrade` make the supervisor execute its program again in its own process;
// the computers stay attached (no close, no new handshake, the same generation), calls in
// flight get their replies and their progress, connections stay open, and new workers of
// the new build run the sessions on.
#include <gtest/gtest.h>

#include <atomic>
#include <csignal>
#include <fstream>
#include <thread>

#include "harness/other_build.hpp"
#include "harness/raw_socket.hpp"
#include "tests/e2e/fidelity_helpers.hpp"

namespace sbtest {
namespace {

class SwitchInPlace : public TwoComputersTest {
 protected:
  // Sends SIGUSR2 and waits for the new process to report the switch: its
  // service_restarted line.
  json switch_in_place(SwitchboardProcess& sb) {
    const std::size_t before = sb.audit().count("service_restarted");
    sb.send_signal(SIGUSR2);
    return wait_restarted(sb, before);
  }

  json wait_restarted(SwitchboardProcess& sb, std::size_t before) {
    const bool switched =
        sb.audit().wait_for_count("service_restarted", before + 1, {}, std::chrono::seconds(20));
    EXPECT_TRUE(switched) << sb.diagnostics();
    if (!switched) return nullptr;
    return sb.audit().events("service_restarted").at(before);
  }
};

TEST_F(SwitchInPlace, ComputersStayAttachedAndACallInFlightGetsItsReply) {
  SwitchboardProcess sb(config());
  auto alpha = attach_alpha(sb);
  auto beta = attach_beta(sb);
  ASSERT_TRUE(alpha && beta);
  const pid_t supervisor = sb.pid();
  const int alpha_worker = sb.worker("alpha")["pid"];
  CallInFlight pending(sb.port(), "/mcp", owner_.secret, "echo", hold(1), "crossing");
  ASSERT_TRUE(alpha->wait_for_calls(1));

  const json restarted = switch_in_place(sb);
  EXPECT_EQ(restarted["resumed"], 2);
  EXPECT_EQ(restarted["redialled"], 0);
  EXPECT_EQ(restarted["old_build"], restarted["new_build"]);
  const auto resumed = sb.audit().events("vm_resumed");
  ASSERT_EQ(resumed.size(), 2u);
  for (const auto& line : resumed) EXPECT_EQ(line["generation"], 1) << line;
  EXPECT_EQ(sb.audit().count("vm_detach"), 0u);
  EXPECT_EQ(sb.audit().count("vm_attach"), 2u);
  EXPECT_EQ(sb.pid(), supervisor);
  const json row = sb.worker("alpha");
  EXPECT_NE(row["pid"], alpha_worker) << "the old worker still runs the session";
  EXPECT_FALSE(row["resumed_at_ms"].is_null());
  EXPECT_EQ(row["state"], "ready");

  // The call crossed: its reply, sent now to the new worker, reaches its caller.
  alpha->answer_echo(call_with_arguments(*alpha, hold(1)));
  const json reply = pending.wait();
  EXPECT_EQ(reply["id"], "crossing");
  EXPECT_EQ(echoed(reply), hold(1));
  const auto call_lines = sb.audit().events("call");
  ASSERT_EQ(call_lines.size(), 1u);
  EXPECT_EQ(call_lines[0]["outcome"], "ok");

  // Nothing closed, nothing handshaken again, ids on the socket go on; new calls work.
  EXPECT_FALSE(alpha->closed());
  EXPECT_FALSE(beta->closed());
  EXPECT_EQ(alpha->requests("initialize").size(), 1u);
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp", owner_.secret, "echo", json{{"n", 2}})),
            (json{{"n", 2}}));
  const auto calls = alpha->calls();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_GT(calls[1]["id"].get<std::uint64_t>(), calls[0]["id"].get<std::uint64_t>());
}

TEST_F(SwitchInPlace, ProgressOnBothSidesOfTheSwitchReachesItsStreamingCaller) {
  SwitchboardProcess sb(config());
  auto alpha = attach_alpha(sb);
  ASSERT_TRUE(alpha);
  OpenCall call(sb.port(),
                post("/mcp/alpha", owner_.secret, call_with_token("p-1", "echo", hold(7), "job")));
  const json seen = computer_call(*alpha, hold(7));
  ASSERT_FALSE(seen.is_null());
  alpha->send_text(progress_notification(token_of(seen), 1, "before").dump());
  expect_event_stream_head(call.head());
  EXPECT_EQ(call.next()["params"]["message"], "before");

  switch_in_place(sb);
  alpha->send_text(progress_notification(token_of(seen), 2, "after").dump());
  const json after = call.next();
  EXPECT_EQ(after["params"]["message"], "after");
  EXPECT_EQ(after["params"]["progressToken"], "job");
  alpha->answer(id_of(seen), text_result("done"));
  const json reply = call.next();
  EXPECT_EQ(reply["id"], "p-1");
  EXPECT_EQ(result_text(reply), "done");
  EXPECT_TRUE(call.next().is_null()) << "the stream went on after the final response";

  // The same keep-alive connection serves the next request.
  call.rest();
  call.connection().send(post("/mcp/alpha", owner_.secret, tool_call(3, "echo", hold(8))));
  alpha->answer_echo(computer_call(*alpha, hold(8)));
  EXPECT_EQ(echoed(call.connection().read_response().json()), hold(8));
}

// A request the computer sent its caller during a call, asked before the switch and
// answered after it: the answer finds it, under the id the caller was given.
TEST_F(SwitchInPlace, ARequestRoutedToACallerBeforeTheSwitchIsAnsweredAfterIt) {
  SwitchboardProcess sb(config());
  auto alpha = attach_alpha(sb);
  ASSERT_TRUE(alpha);
  OpenCall call(sb.port(), post("/mcp/alpha", owner_.secret, tool_call("ask", "echo", hold(5))));
  const json seen = computer_call(*alpha, hold(5));
  ASSERT_FALSE(seen.is_null());
  const json elicit{{"jsonrpc", "2.0"},
                    {"id", "e-1"},
                    {"method", "elicitation/create"},
                    {"params", {{"message", "Which colour?"}}}};
  alpha->send_text(elicit.dump());
  expect_event_stream_head(call.head());
  const json asked = call.next();
  ASSERT_EQ(asked["method"], "elicitation/create") << asked;

  switch_in_place(sb);
  const json answer{{"jsonrpc", "2.0"}, {"id", asked["id"]}, {"result", {{"action", "decline"}}}};
  EXPECT_EQ(http(sb.port(), post("/mcp/alpha", owner_.secret, answer)).status, 202);
  const json answered = alpha->wait_for_frame([](const json& frame) {
    return frame.is_object() && frame.value("id", json()) == "e-1" && frame.contains("result");
  });
  EXPECT_EQ(answered,
            (json{{"jsonrpc", "2.0"}, {"id", "e-1"}, {"result", {{"action", "decline"}}}}));
  alpha->answer(id_of(seen), text_result("declined"));
  const json reply = call.next();
  EXPECT_EQ(reply["id"], "ask");
  EXPECT_EQ(result_text(reply), "declined");
}

TEST_F(SwitchInPlace, AnIdleKeepAliveConnectionCrossesAndServesTheNextRequest) {
  SwitchboardProcess sb(config());
  auto alpha = attach_alpha(sb);
  ASSERT_TRUE(alpha);
  HttpConnection connection(sb.port());
  const json first =
      connection.request(post("/mcp/alpha", owner_.secret, tool_call(1, "echo", json{{"n", 1}})))
          .json();
  EXPECT_EQ(echoed(first), (json{{"n", 1}}));
  switch_in_place(sb);
  const json second =
      connection.request(post("/mcp/alpha", owner_.secret, tool_call(2, "echo", json{{"n", 2}})))
          .json();
  EXPECT_EQ(echoed(second), (json{{"n", 2}}));
}

// A caller that has sent half its request's head holds no switch for the drain's time (a
// slowloris would hold every switch): its bytes cross as they are, and the new process
// answers the request once the caller finishes it. The drain here is five minutes; the
// switch must be done within wait_restarted's bound.
TEST_F(SwitchInPlace, AHalfSentRequestHeadCrossesAndTheSwitchDoesNotWaitForIt) {
  SwitchboardProcess sb(config().timeout_setting("drain_secs", 300));
  auto alpha = attach_alpha(sb);
  ASSERT_TRUE(alpha);
  const std::string call = tool_call(1, "echo", json{{"n", 1}}).dump();
  RawSocket caller(sb.port());
  ASSERT_TRUE(
      caller.send_all("POST /mcp/alpha HTTP/1.1\r\nHost: switchboard\r\nAuthorization: "
                      "Bearer " +
                      owner_.secret + "\r\n"));
  ASSERT_FALSE(switch_in_place(sb).is_null());
  ASSERT_TRUE(
      caller.send_all("Content-Type: application/json\r\nAccept: application/json\r\n"
                      "Connection: close\r\nContent-Length: " +
                      std::to_string(call.size()) + "\r\n\r\n" + call));
  const std::string answer = caller.read_to_end();
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 200")) << answer;
  const json reply = json::parse(answer.substr(answer.find("\r\n\r\n") + 4), nullptr, false);
  EXPECT_EQ(echoed(reply), (json{{"n", 1}})) << answer;
}

TEST_F(SwitchInPlace, ANewConfigRelabelsARenamedComputerAndClosesARemovedOneWith4003) {
  SwitchboardProcess sb(config());
  auto alpha = attach_alpha(sb);
  auto beta = attach_beta(sb);
  ASSERT_TRUE(alpha && beta);
  sb.write_config(ConfigBuilder()
                      .computer("alpha-2", alpha_)
                      .client("owner", owner_, R"({ "*" = ["*"] })", "alpha-2"));

  const json restarted = switch_in_place(sb);
  EXPECT_EQ(restarted["resumed"], 1);
  EXPECT_EQ(restarted["redialled"], 1);
  const auto closed = beta->wait_closed();
  ASSERT_TRUE(closed);
  EXPECT_TRUE(closed->close_frame);
  EXPECT_EQ(closed->code, 4003);
  EXPECT_EQ(sb.audit().count("vm_revoked", fields_equal({{"computer", "beta"}})), 1u);
  EXPECT_EQ(sb.audit().count("vm_detach", fields_equal({{"computer", "beta"}, {"code", 4003}})),
            1u);
  EXPECT_EQ(
      sb.audit().count("computer_renamed", fields_equal({{"from", "alpha"}, {"to", "alpha-2"}})),
      1u);
  EXPECT_FALSE(alpha->closed());
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp/alpha-2", owner_.secret, "echo", json{{"n", 1}})),
            (json{{"n", 1}}));
}

TEST_F(SwitchInPlace, AComputerStillMidMessageAfterTheDrainIsClosedAndTheOthersResume) {
  SwitchboardProcess sb(config().timeout_setting("drain_secs", 1));
  auto alpha = attach_alpha(sb);
  auto beta = attach_beta(sb);
  ASSERT_TRUE(alpha && beta);
  alpha->send_first_fragment(R"({"jsonrpc":"2.0","method":"notifications/message",)");

  const json restarted = switch_in_place(sb);
  EXPECT_EQ(restarted["resumed"], 1);
  EXPECT_EQ(restarted["redialled"], 1);
  const auto closed = alpha->wait_closed();
  ASSERT_TRUE(closed);
  EXPECT_EQ(closed->code, 1001);
  EXPECT_FALSE(beta->closed());
  EXPECT_EQ(sb.audit().count("vm_detach", fields_equal({{"computer", "alpha"}, {"code", 1001}})),
            1u);
  // Its computer dials again, as after any 1001, and gets the next generation.
  auto again = attach_alpha(sb);
  ASSERT_TRUE(again);
  EXPECT_EQ(sb.audit().count("vm_attach", fields_equal({{"computer", "alpha"}, {"generation", 2}})),
            1u);
}

// The build this test was built as: its workers say it in their hello.
std::string running_build(const SwitchboardProcess& sb) {
  std::string build;
  EXPECT_TRUE(eventually([&] {
    build = sb.worker("alpha").value("build", std::string());
    return !build.empty();
  }));
  return build;
}

TEST_F(SwitchInPlace, UpgradeSwitchesToTheBuildNowAtTheProgramsPathEverywhere) {
  TempDir programs("sb-programs");
  const fs::path installed = programs.path() / "bin";
  std::string build;
  {
    SwitchboardProcess probe(config());
    build = running_build(probe);
  }
  const std::string nonce = build.substr(build.find('+') + 1);
  const std::string other(nonce.size(), nonce[0] == 'f' ? 'e' : 'f');
  harness::copy_as_other_build(bin_dir(), installed, nonce, nonce);
  SwitchboardProcess sb(config(), installed / "switchboard");
  auto alpha = attach_alpha(sb);
  ASSERT_TRUE(alpha);
  // A package upgrade: new files renamed over the old ones while the old ones run.
  harness::copy_as_other_build(bin_dir(), installed, nonce, other);

  const CommandResult upgrade = sb.run_cli({"upgrade"});
  EXPECT_EQ(upgrade.exit_code, 0) << upgrade.out << upgrade.err << sb.diagnostics();
  EXPECT_NE(upgrade.out.find("alpha\tresumed"), std::string::npos) << upgrade.out;
  const json restarted = sb.audit().events("service_restarted").at(0);
  EXPECT_EQ(restarted["old_build"], build);
  EXPECT_EQ(restarted["new_build"], "0.1.0+" + other);
  EXPECT_TRUE(eventually([&] {
    for (const auto& row : sb.workers())
      if (row["build"] != restarted["new_build"]) return false;
    return true;
  })) << "a worker of the old build runs: "
      << sb.workers();
  EXPECT_FALSE(alpha->closed());
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp/alpha", owner_.secret, "echo", json{{"n", 1}})),
            (json{{"n", 1}}));
}

TEST_F(SwitchInPlace, AnUpgradeToAProgramThatCannotCheckTheConfigIsRefusedAndChangesNothing) {
  TempDir programs("sb-programs");
  const fs::path installed = programs.path() / "bin";
  fs::create_directories(installed);
  for (const char* program : {"switchboard", "switchboard-worker"})
    fs::copy_file(bin_dir() / program, installed / program);
  SwitchboardProcess sb(config(), installed / "switchboard");
  auto alpha = attach_alpha(sb);
  ASSERT_TRUE(alpha);
  const json before = sb.worker("alpha");
  // A broken upgrade: the file at the program's path runs, but fails.
  const fs::path broken = installed / "switchboard.new";
  std::ofstream(broken) << "#!/bin/sh\nexit 3\n";
  fs::permissions(broken, fs::perms::owner_all);
  fs::rename(broken, installed / "switchboard");

  const CommandResult upgrade = sb.run_cli({"upgrade"});
  EXPECT_EQ(upgrade.exit_code, 1);
  EXPECT_NE(upgrade.out.find("not switched"), std::string::npos) << upgrade.out << upgrade.err;
  EXPECT_NE(upgrade.out.find("exit code 3"), std::string::npos) << upgrade.out;
  EXPECT_EQ(sb.audit().count("service_restarted"), 0u);
  EXPECT_EQ(sb.worker("alpha")["pid"], before["pid"]);
  EXPECT_FALSE(alpha->closed());
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp/alpha", owner_.secret, "echo", json{{"n", 1}})),
            (json{{"n", 1}}));
}

TEST_F(SwitchInPlace, ASignalWithAConfigTheNewBuildRefusesIsRefusedAndChangesNothing) {
  SwitchboardProcess sb(config());
  auto alpha = attach_alpha(sb);
  ASSERT_TRUE(alpha);
  const json before = sb.worker("alpha");
  sb.write_config(config().timeout_setting("drain_secs", 301));  // out of range
  sb.send_signal(SIGUSR2);
  EXPECT_TRUE(eventually([&] {
    return sb.stderr_text().find("switch refused") != std::string::npos;
  })) << sb.diagnostics();
  EXPECT_EQ(sb.audit().count("service_restarted"), 0u);
  sb.write_config(config());  // for the command line that reads the workers
  EXPECT_EQ(sb.worker("alpha")["pid"], before["pid"]);
  EXPECT_FALSE(alpha->closed());
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp/alpha", owner_.secret, "echo", json{{"n", 1}})),
            (json{{"n", 1}}));
}

// Twenty switches while callers loop calls and a prober connects every few milliseconds:
// no call fails, no connection is refused, no computer is closed.
TEST_F(SwitchInPlace, TwentySwitchesUnderLoadFailNoCallAndRefuseNoConnection) {
  SwitchboardProcess sb(config());
  auto alpha = attach_alpha(sb);
  auto beta = attach_beta(sb);
  ASSERT_TRUE(alpha && beta);
  std::atomic<bool> stop{false};
  std::atomic<int> calls{0};
  std::atomic<int> failed{0};
  std::atomic<int> refused{0};
  auto caller = [&](const std::string& computer) {
    HttpConnection connection(sb.port());
    for (int n = 0; !stop; ++n) {
      try {
        const json reply = connection
                               .request(post("/mcp/" + computer, owner_.secret,
                                             tool_call(n, "echo", json{{"n", n}})))
                               .json();
        if (echoed(reply) != json{{"n", n}}) ++failed;
      } catch (const std::exception&) {
        ++failed;
      }
      ++calls;
    }
  };
  std::thread alpha_caller(caller, "alpha");
  std::thread beta_caller(caller, "beta");
  std::thread prober([&] {
    while (!stop) {
      try {
        if (http_get(sb.port(), "/healthz").status != 200) ++refused;
      } catch (const std::exception&) {
        ++refused;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(3));
    }
  });
  for (int i = 0; i < 20; ++i) {
    const int before = calls;
    ASSERT_TRUE(eventually([&] { return calls >= before + 5; })) << "calls stopped";
    if (switch_in_place(sb).is_null()) break;
  }
  stop = true;
  alpha_caller.join();
  beta_caller.join();
  prober.join();
  EXPECT_EQ(failed, 0) << "of " << calls << " calls";
  EXPECT_EQ(refused, 0);
  EXPECT_EQ(sb.audit().count("service_restarted"), 20u);
  EXPECT_EQ(sb.audit().count("vm_detach"), 0u);
  EXPECT_EQ(sb.audit().count("vm_resumed"), 40u);
  EXPECT_FALSE(alpha->closed());
  EXPECT_FALSE(beta->closed());
  EXPECT_EQ(alpha->requests("initialize").size(), 1u);
}

}  // namespace
}  // namespace sbtest
