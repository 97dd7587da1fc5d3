// End to end: several computers on one switchboard (docs/protocol.md, "Attach";
// docs/configuration.md, "Reload"). Two computers attached together; evicting, rotating or
// removing one leaves the other serving; renames and verifier swaps by reload close
// nothing; a computer added by reload accepts an attach at once; in-flight isolation
// between computers; an abandoned call gives its share back.
#include <gtest/gtest.h>

#include "tests/e2e/e2e_helpers.hpp"

namespace sbtest {
namespace {

class MultiComputer : public ::testing::Test {
 protected:
  Secret alpha_ = new_secret();
  Secret beta_ = new_secret();
  Secret owner_ = new_secret();
  Secret alice_ = new_secret();

  // Both computers, under the names given; owner ("*") defaults to the first.
  ConfigBuilder config(const std::string& first = "alpha", const std::string& second = "beta",
                       const Secret* first_secret = nullptr,
                       const Secret* second_secret = nullptr) const {
    return ConfigBuilder()
        .computer(first, first_secret ? *first_secret : alpha_)
        .computer(second, second_secret ? *second_secret : beta_)
        .client("owner", owner_, R"({ "*" = ["*"] })", first)
        .client("alice", alice_, "{ " + first + R"( = ["echo"], )" + second + R"( = ["echo"] })",
                first);
  }

  struct Pair {
    std::unique_ptr<FakeComputer> alpha;
    std::unique_ptr<FakeComputer> beta;
    explicit operator bool() const { return alpha && beta; }
  };

  Pair attach_both(const SwitchboardProcess& sb) const {
    return Pair{attach_ready(sb, alpha_, "alpha", owner_.secret),
                attach_ready(sb, beta_, "beta", owner_.secret)};
  }

  // A call through `path` must reach `fake` (and be answered by it).
  static void expect_served_by(const SwitchboardProcess& sb, const std::string& path,
                               const std::string& token, const FakeComputer& fake, int n) {
    const std::size_t before = fake.calls().size();
    const json reply = call_tool(sb.port(), path, token, "echo", json{{"n", n}});
    EXPECT_EQ(echoed(reply), (json{{"n", n}})) << path << ": " << reply;
    EXPECT_EQ(fake.calls().size(), before + 1) << path << " was not served by the expected fake";
  }
};

TEST_F(MultiComputer, TwoComputersStayAttachedTogether) {
  SwitchboardProcess sb(config());
  auto both = attach_both(sb);
  ASSERT_TRUE(both);
  EXPECT_EQ(computers_entry(sb, owner_.secret, "alpha")["ready"], true);
  EXPECT_EQ(computers_entry(sb, owner_.secret, "beta")["ready"], true);
  expect_served_by(sb, "/mcp/alpha", alice_.secret, *both.alpha, 1);
  expect_served_by(sb, "/mcp/beta", alice_.secret, *both.beta, 2);
  expect_served_by(sb, "/mcp", alice_.secret, *both.alpha, 3);
  EXPECT_FALSE(both.alpha->closed());
  EXPECT_FALSE(both.beta->closed());
  EXPECT_EQ(sb.audit().count("vm_attach", fields_equal({{"computer", "alpha"}, {"generation", 1}})),
            1u);
  EXPECT_EQ(sb.audit().count("vm_attach", fields_equal({{"computer", "beta"}, {"generation", 1}})),
            1u);
  EXPECT_EQ(sb.audit().count("vm_takeover"), 0u);
  EXPECT_EQ(sb.audit().count("vm_detach"), 0u);
}

TEST_F(MultiComputer, EvictingOneLeavesTheOtherAttachedAndServing) {
  SwitchboardProcess sb(config());
  auto both = attach_both(sb);
  ASSERT_TRUE(both);
  auto successor = attach_ready(sb, alpha_, "alpha", owner_.secret);
  ASSERT_TRUE(successor);
  const auto closed = both.alpha->wait_closed();
  ASSERT_TRUE(closed);
  EXPECT_EQ(closed->code, 4002);
  expect_served_by(sb, "/mcp/beta", alice_.secret, *both.beta, 1);
  expect_served_by(sb, "/mcp/alpha", alice_.secret, *successor, 2);
  EXPECT_FALSE(both.beta->closed());
  EXPECT_EQ(sb.audit().count("vm_detach", fields_equal({{"computer", "beta"}})), 0u);
  EXPECT_EQ(sb.audit().count("vm_takeover", fields_equal({{"computer", "beta"}})), 0u);
}

TEST_F(MultiComputer, RotatingOneLeavesTheOtherAttachedAndServing) {
  SwitchboardProcess sb(config());
  auto both = attach_both(sb);
  ASSERT_TRUE(both);
  alpha_ = new_secret();
  sb.reload(config());
  const auto closed = both.alpha->wait_closed();
  ASSERT_TRUE(closed);
  EXPECT_EQ(closed->code, 4003);
  EXPECT_TRUE(sb.audit().wait_for("vm_revoked", fields_equal({{"computer", "alpha"}})));
  expect_served_by(sb, "/mcp/beta", alice_.secret, *both.beta, 1);
  EXPECT_FALSE(both.beta->closed());
  EXPECT_EQ(sb.audit().count("vm_revoked", fields_equal({{"computer", "beta"}})), 0u);
  EXPECT_EQ(sb.audit().count("vm_detach", fields_equal({{"computer", "beta"}})), 0u);
}

TEST_F(MultiComputer, RemovingOneLeavesTheOtherAttachedAndServing) {
  SwitchboardProcess sb(config());
  auto both = attach_both(sb);
  ASSERT_TRUE(both);
  const Secret removed = alpha_;
  sb.reload(ConfigBuilder()
                .computer("beta", beta_)
                .client("owner", owner_, R"({ "*" = ["*"] })", "beta")
                .client("alice", alice_, R"({ beta = ["echo"] })"));
  const auto closed = both.alpha->wait_closed();
  ASSERT_TRUE(closed);
  EXPECT_EQ(closed->code, 4003);
  const auto revoked = sb.audit().wait_for("vm_revoked");
  ASSERT_TRUE(revoked);
  EXPECT_EQ((*revoked)["computer"], "alpha");
  expect_served_by(sb, "/mcp/beta", alice_.secret, *both.beta, 1);
  expect_served_by(sb, "/mcp", owner_.secret, *both.beta, 2);
  EXPECT_FALSE(both.beta->closed());
  EXPECT_EQ(
      http_get(sb.port(), "/computers", owner_.secret).json(),
      (json::array({{{"attached", true}, {"default", true}, {"name", "beta"}, {"ready", true}}})));
  const auto gone = post_mcp(sb.port(), "/mcp/alpha", owner_.secret, rpc(1, "tools/list"));
  EXPECT_EQ(gone.status, 404);
  EXPECT_EQ(gone.body, "no such computer");
  FakeComputer stale(sb.port(), FakeComputerOptions{.secret = removed.secret});
  EXPECT_EQ(stale.attach(), 401);
}

TEST_F(MultiComputer, ASameVerifierRenameKeepsTheSocket) {
  SwitchboardProcess sb(config());
  auto both = attach_both(sb);
  ASSERT_TRUE(both);
  sb.reload(config("gamma", "beta"));  // alpha's verifier, now named gamma
  const auto renamed = sb.audit().wait_for("computer_renamed");
  ASSERT_TRUE(renamed);
  EXPECT_EQ((*renamed)["from"], "alpha");
  EXPECT_EQ((*renamed)["to"], "gamma");
  EXPECT_EQ((*renamed)["attached"], true);
  EXPECT_EQ((*renamed)["generation"], 1);

  expect_served_by(sb, "/mcp/gamma", alice_.secret, *both.alpha, 1);
  EXPECT_FALSE(both.alpha->closed()) << "a rename must not close the socket";
  EXPECT_EQ(sb.audit().count("vm_revoked"), 0u);
  EXPECT_EQ(sb.audit().count("vm_detach"), 0u);
  EXPECT_EQ(computers_entry(sb, owner_.secret, "gamma")["ready"], true);
  EXPECT_TRUE(computers_entry(sb, owner_.secret, "alpha").is_null());
  EXPECT_EQ(post_mcp(sb.port(), "/mcp/alpha", owner_.secret, rpc(1, "tools/list")).status, 404);
  const json status = call_tool(sb.port(), "/mcp/gamma", owner_.secret, "vm_status");
  EXPECT_EQ(status["result"]["structuredContent"]["computer"], "gamma");
  EXPECT_EQ(status["result"]["structuredContent"]["attached"], true);

  // The socket lives on under its new label: its detach is recorded as gamma.
  both.alpha->drop();
  const auto detach = sb.audit().wait_for("vm_detach");
  ASSERT_TRUE(detach);
  EXPECT_EQ((*detach)["computer"], "gamma");
  EXPECT_EQ((*detach)["generation"], 1);
}

TEST_F(MultiComputer, RenamingAnUnattachedComputerMovesItsSlot) {
  SwitchboardProcess sb(config());
  sb.reload(config("gamma", "beta"));
  const auto renamed = sb.audit().wait_for("computer_renamed");
  ASSERT_TRUE(renamed);
  EXPECT_EQ((*renamed)["from"], "alpha");
  EXPECT_EQ((*renamed)["to"], "gamma");
  EXPECT_EQ((*renamed)["attached"], false);
  EXPECT_EQ((*renamed)["generation"], 0);
  // alpha's secret now attaches as gamma.
  auto fake = attach_ready(sb, alpha_, "gamma", owner_.secret);
  ASSERT_TRUE(fake);
  EXPECT_TRUE(
      sb.audit().wait_for("vm_attach", fields_equal({{"computer", "gamma"}, {"generation", 1}})));
  expect_served_by(sb, "/mcp/gamma", alice_.secret, *fake, 1);
}

TEST_F(MultiComputer, SwappingTwoVerifiersBetweenNamesEvictsNothing) {
  SwitchboardProcess sb(config());
  auto both = attach_both(sb);
  ASSERT_TRUE(both);
  sb.reload(config("alpha", "beta", &beta_, &alpha_));
  ASSERT_TRUE(sb.audit().wait_for_count("computer_renamed", 2));
  EXPECT_EQ(sb.audit().count("computer_renamed",
                             fields_equal({{"from", "alpha"}, {"to", "beta"}, {"attached", true}})),
            1u);
  EXPECT_EQ(sb.audit().count("computer_renamed",
                             fields_equal({{"from", "beta"}, {"to", "alpha"}, {"attached", true}})),
            1u);
  // The names now lead to the other socket; both sockets stayed open.
  expect_served_by(sb, "/mcp/alpha", alice_.secret, *both.beta, 1);
  expect_served_by(sb, "/mcp/beta", alice_.secret, *both.alpha, 2);
  EXPECT_FALSE(both.alpha->closed());
  EXPECT_FALSE(both.beta->closed());
  EXPECT_EQ(sb.audit().count("vm_revoked"), 0u);
  EXPECT_EQ(sb.audit().count("vm_detach"), 0u);
}

TEST_F(MultiComputer, InOneReloadRenamesAreWrittenBeforeRevokes) {
  SwitchboardProcess sb(config());
  auto both = attach_both(sb);
  ASSERT_TRUE(both);
  const Secret rotated = new_secret();
  // alpha keeps its verifier under a new name; beta's verifier is rotated.
  sb.reload(config("gamma", "beta", &alpha_, &rotated));
  const auto closed = both.beta->wait_closed();
  ASSERT_TRUE(closed);
  EXPECT_EQ(closed->code, 4003);
  ASSERT_TRUE(sb.audit().wait_for("vm_revoked"));
  std::vector<std::string> order;
  for (const auto& line : sb.audit().lines()) {
    const std::string event = line.value("event", "");
    if (event == "computer_renamed" || event == "vm_revoked" || event == "config_reloaded")
      order.push_back(event);
  }
  EXPECT_EQ(order, (std::vector<std::string>{"computer_renamed", "vm_revoked", "config_reloaded"}));
  EXPECT_EQ(sb.audit().events("vm_revoked")[0]["computer"], "beta");
  expect_served_by(sb, "/mcp/gamma", alice_.secret, *both.alpha, 1);
  EXPECT_FALSE(both.alpha->closed());
}

TEST_F(MultiComputer, AComputerAddedByReloadAcceptsAnAttachAtOnce) {
  SwitchboardProcess sb(ConfigBuilder()
                            .computer("alpha", alpha_)
                            .client("owner", owner_, R"({ "*" = ["*"] })", "alpha"));
  auto alpha = attach_ready(sb, alpha_, "alpha", owner_.secret);
  ASSERT_TRUE(alpha);
  FakeComputer early(sb.port(), FakeComputerOptions{.secret = beta_.secret});
  EXPECT_EQ(early.attach(), 401) << "beta is not configured yet";

  sb.reload(config());
  // No retry: the first attach after the reload is accepted.
  FakeComputer beta(sb.port(), FakeComputerOptions{.secret = beta_.secret});
  ASSERT_EQ(beta.attach(), 101) << beta.refusal().status << " " << beta.refusal().body;
  ASSERT_TRUE(wait_ready(sb, owner_.secret, "beta"));
  expect_served_by(sb, "/mcp/beta", alice_.secret, beta, 1);
  expect_served_by(sb, "/mcp/alpha", alice_.secret, *alpha, 2);
  EXPECT_FALSE(alpha->closed());
}

TEST_F(MultiComputer, OneComputerFullTheOtherStillAnswers) {
  SwitchboardProcess sb(ConfigBuilder()
                            .computer("alpha", alpha_, 1)
                            .computer("beta", beta_, 1)
                            .client("owner", owner_, R"({ "*" = ["*"] })", "alpha"));
  auto both = attach_both(sb);
  ASSERT_TRUE(both);
  CallInFlight pending(sb.port(), "/mcp/alpha", owner_.secret, "echo", hold(1));
  ASSERT_TRUE(both.alpha->wait_for_calls(1));
  EXPECT_EQ(error_code(call_tool(sb.port(), "/mcp/alpha", owner_.secret, "echo", json{{"n", 1}})),
            kOverloaded);
  expect_served_by(sb, "/mcp/beta", owner_.secret, *both.beta, 2);
  both.alpha->answer_echo(both.alpha->calls()[0]);
  EXPECT_EQ(echoed(pending.wait()), hold(1));
}

TEST_F(MultiComputer, ACallerWhoseConnectionClosesMidCallGetsItsShareBackAtOnce) {
  // alice may have one call in flight on alpha.
  SwitchboardProcess sb(ConfigBuilder()
                            .computer("alpha", alpha_)
                            .client("owner", owner_, R"({ "*" = ["*"] })", "alpha")
                            .client("alice", alice_, R"({ alpha = ["echo"] })", "alpha", 1));
  auto alpha = attach_ready(sb, alpha_, "alpha", owner_.secret);
  ASSERT_TRUE(alpha);

  HttpConnection first(sb.port());
  first.send(mcp_request("/mcp", alice_.secret, tool_call(1, "echo", hold(1))));
  ASSERT_TRUE(alpha->wait_for_calls(1));
  // The cap binds while that call is pending.
  EXPECT_EQ(error_code(call_tool(sb.port(), "/mcp", alice_.secret, "echo", json{{"n", 0}})),
            kOverloaded);

  first.close();
  const auto closed_at = Clock::now();
  const auto abandoned = sb.audit().wait_for("call", fields_equal({{"outcome", "abandoned"}}));
  ASSERT_TRUE(abandoned) << "an abandoned call is audited as `abandoned`";
  EXPECT_LT(elapsed_since(closed_at), 2s);
  EXPECT_EQ((*abandoned)["principal"], "alice");
  EXPECT_EQ((*abandoned)["computer"], "alpha");

  // The first call is still unanswered at the computer, and alice's next call is accepted.
  const json next = call_tool(sb.port(), "/mcp", alice_.secret, "echo", json{{"n", 2}});
  EXPECT_EQ(echoed(next), (json{{"n", 2}})) << next;
  // The late answer to the abandoned call is dropped; nothing breaks.
  alpha->answer_echo(call_with_arguments(*alpha, hold(1)));
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp", alice_.secret, "echo", json{{"n", 3}})),
            (json{{"n", 3}}));
  EXPECT_EQ(sb.audit().count("call", fields_equal({{"outcome", "abandoned"}})), 1u);
}

}  // namespace
}  // namespace sbtest
