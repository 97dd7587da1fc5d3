// End to end: volume. Large replies cross both processes intact up to the 16 MiB message
// limit; many concurrent calls over two computers each get their own answer; attaching,
// detaching and calling many times leaks no descriptor in the supervisor or a worker.
#include <gtest/gtest.h>

#include "tests/e2e/e2e_helpers.hpp"

namespace sbtest {
namespace {

constexpr std::size_t kMaxMessage = 16 * 1024 * 1024;

std::size_t open_descriptors(pid_t pid) {
  std::size_t count = 0;
  std::error_code error;
  for (auto it = fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", error);
       !error && it != fs::directory_iterator(); it.increment(error)) {
    ++count;
  }
  return count;
}

// Both computers, and owner, at 16 calls in flight.
class Load : public TwoComputersTest {
 protected:
  ConfigBuilder config() const { return TwoComputersTest::config(16); }
};

// A reply whose compact text is exactly `size` bytes, for the request with `id`.
std::string reply_of_size(std::uint64_t id, std::size_t size) {
  auto text = [&](std::size_t padding) {
    return json{
        {"id", id},
        {"jsonrpc", "2.0"},
        {"result",
         {{"content", json::array({{{"type", "text"}, {"text", std::string(padding, 'p')}}})},
          {"isError", false}}}}
        .dump();
  };
  const std::size_t overhead = text(0).size();
  return text(size - overhead);
}

TEST_F(Load, RepliesUpToSixteenMebibytesCrossIntact) {
  SwitchboardProcess sb(config());
  auto alpha = attach_alpha(sb);
  ASSERT_TRUE(alpha);
  for (const std::size_t size : {std::size_t{3 * 1024 * 1024}, kMaxMessage}) {
    SCOPED_TRACE(size);
    const std::size_t before = alpha->calls().size();
    CallInFlight pending(sb.port(), "/mcp/alpha", owner_.secret, "echo", hold(int(size)), "big");
    ASSERT_TRUE(alpha->wait_for_calls(before + 1));
    const std::uint64_t id = alpha->calls().back()["id"].get<std::uint64_t>();
    const std::string reply = reply_of_size(id, size);
    ASSERT_EQ(reply.size(), size);
    alpha->send_text(reply);
    const json relayed = pending.wait(30s);
    ASSERT_TRUE(relayed.is_object());
    EXPECT_EQ(relayed["id"], "big");
    json expected = json::parse(reply);
    expected["id"] = "big";
    EXPECT_TRUE(relayed == expected) << "the reply was altered on the way";
    const auto line = sb.audit().wait_for(
        "call", fields_equal({{"response_bytes", size}, {"outcome", "ok"}}), 10s);
    EXPECT_TRUE(line) << "no call line with response_bytes " << size;
  }
  EXPECT_FALSE(alpha->closed());
}

TEST_F(Load, ManyConcurrentCallsOverTwoComputersEachGetTheirOwnAnswer) {
  SwitchboardProcess sb(config());
  auto delayed = [](const json& params) {
    const int n = params["arguments"].value("n", 0);
    return CallAction::echo(std::chrono::milliseconds((n * 7) % 40));
  };
  auto alpha = attach_alpha(sb, FakeComputerOptions{.on_call = delayed});
  auto beta = attach_beta(sb, FakeComputerOptions{.on_call = delayed});
  ASSERT_TRUE(alpha && beta);
  constexpr int kCalls = 32;
  std::vector<std::unique_ptr<CallInFlight>> calls;
  for (int n = 0; n < kCalls; ++n) {
    calls.push_back(std::make_unique<CallInFlight>(
        sb.port(), n % 2 ? "/mcp/beta" : "/mcp/alpha", owner_.secret, "echo",
        json{{"n", n}, {"on", n % 2 ? "beta" : "alpha"}}, n % 3 ? json(n % 3) : json("same")));
  }
  for (int n = 0; n < kCalls; ++n) {
    const json reply = calls[n]->wait(20s);
    EXPECT_EQ(echoed(reply), (json{{"n", n}, {"on", n % 2 ? "beta" : "alpha"}}))
        << "call " << n << " got " << reply;
    EXPECT_EQ(reply["id"], n % 3 ? json(n % 3) : json("same"));
  }
  EXPECT_EQ(alpha->calls().size(), kCalls / 2u);
  EXPECT_EQ(beta->calls().size(), kCalls / 2u);
  EXPECT_TRUE(sb.audit().wait_for_count("call", kCalls, fields_equal({{"outcome", "ok"}})));
}

TEST_F(Load, AttachingAndCallingManyTimesLeaksNoDescriptor) {
  SwitchboardProcess sb(config());
  auto first = attach_alpha(sb);
  ASSERT_TRUE(first);
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp/alpha", owner_.secret, "echo", json{{"n", 0}})),
            (json{{"n", 0}}));
  const pid_t worker = sb.worker("alpha")["pid"].get<pid_t>();
  const std::size_t supervisor_baseline = open_descriptors(sb.pid());
  const std::size_t worker_baseline = open_descriptors(worker);

  std::unique_ptr<FakeComputer> current = std::move(first);
  for (int round = 1; round <= 10; ++round) {
    auto next = attach_alpha(sb);  // takes over
    ASSERT_TRUE(next);
    ASSERT_TRUE(current->wait_closed());
    current = std::move(next);
    EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp/alpha", owner_.secret, "echo", json{{"n", round}})),
              (json{{"n", round}}));
    // A refused attach and an abandoned call, too.
    FakeComputer refused(sb.port(), FakeComputerOptions{.secret = "wrong"});
    EXPECT_EQ(refused.attach(), 401);
    HttpConnection hung_up(sb.port());
    hung_up.send(mcp_request("/mcp/alpha", owner_.secret, tool_call(1, "echo", hold(round))));
    ASSERT_TRUE(current->wait_for_calls(2));
    hung_up.close();
    ASSERT_TRUE(sb.audit().wait_for_count("call", std::size_t(round),
                                          fields_equal({{"outcome", "abandoned"}})));
  }
  EXPECT_TRUE(eventually([&] { return open_descriptors(sb.pid()) <= supervisor_baseline; }))
      << "supervisor: " << open_descriptors(sb.pid()) << " open, " << supervisor_baseline
      << " before";
  EXPECT_TRUE(eventually([&] { return open_descriptors(worker) <= worker_baseline; }))
      << "worker: " << open_descriptors(worker) << " open, " << worker_baseline << " before";
  EXPECT_EQ(sb.worker("alpha")["pid"], worker);
}

}  // namespace
}  // namespace sbtest
