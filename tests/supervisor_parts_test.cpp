// Small supervisor pieces with rules of their own: the peer label (docs/protocol.md, "Peer
// label"), path decoding, JSON nesting, the JSON-RPC error codes, and the client table's
// constant-time lookup.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "shared/jsonrpc.hpp"
#include "supervisor/client_table.hpp"
#include "supervisor/peer_label.hpp"
#include "supervisor/router.hpp"
#include "supervisor/worker.hpp"

namespace sb::supervisor {
namespace {

TEST(PeerLabel, PrefersTheTailscaleLogin) {
  EXPECT_EQ(peer_label("alice@example.com", "10.0.0.1", "127.0.0.1:5"),
            "alice@example.com via 127.0.0.1:5");
}

TEST(PeerLabel, FallsBackToTheFirstForwardedForEntry) {
  EXPECT_EQ(peer_label(std::nullopt, "203.0.113.7, 10.0.0.1", "127.0.0.1:5"),
            "203.0.113.7 via 127.0.0.1:5");
  EXPECT_EQ(peer_label("caf\xc3\xa9", "203.0.113.7", "127.0.0.1:5"), "203.0.113.7 via 127.0.0.1:5");
}

TEST(PeerLabel, IsTheSocketAddressWithoutAUsableHeader) {
  EXPECT_EQ(peer_label(std::nullopt, std::nullopt, "[::1]:8"), "[::1]:8");
  EXPECT_EQ(peer_label("bad\x01", std::nullopt, "127.0.0.1:5"), "127.0.0.1:5");
}

TEST(PeerLabel, TruncatesLongIdentities) {
  const std::string label = peer_label(std::string(300, 'a'), std::nullopt, "127.0.0.1:5");
  EXPECT_EQ(label, std::string(128, 'a') + " via 127.0.0.1:5");
}

TEST(Paths, DecodeOneSegment) {
  EXPECT_EQ(percent_decode("mac%2Dmini"), "mac-mini");
  EXPECT_EQ(percent_decode("plain"), "plain");
  EXPECT_FALSE(percent_decode("bad%2"));
  EXPECT_FALSE(percent_decode("bad%zz"));
  EXPECT_EQ(request_path("/mcp/a?x=1"), "/mcp/a");
}

TEST(JsonNesting, RefusesDeepBracketsButNotBracketsInStrings) {
  EXPECT_TRUE(jsonrpc::nesting_within(R"({"a":[1,{"b":2}]})", 3));
  EXPECT_FALSE(jsonrpc::nesting_within(std::string(300, '['), 256));
  EXPECT_TRUE(jsonrpc::nesting_within("\"" + std::string(300, '[') + "\"", 1));
  EXPECT_TRUE(jsonrpc::nesting_within(R"({"a":"\"[[["})", 1));
}

// The wire values of docs/protocol.md, "Errors": the end-to-end tests compare replies with
// these constants, so they are pinned here.
TEST(JsonRpcErrors, HaveTheDocumentedCodesAndMessages) {
  EXPECT_EQ(jsonrpc::kParseError, -32700);
  EXPECT_EQ(jsonrpc::kInvalidRequest, -32600);
  EXPECT_EQ(jsonrpc::kMethodNotFound, -32601);
  EXPECT_EQ(jsonrpc::kInvalidParams, -32602);
  EXPECT_EQ(jsonrpc::kNotAttached, -32001);
  EXPECT_EQ(jsonrpc::kOverloaded, -32002);
  EXPECT_EQ(jsonrpc::kTimeout, -32003);
  EXPECT_EQ(jsonrpc::kDisconnected, -32004);
  EXPECT_EQ(jsonrpc::relay_error_message(jsonrpc::kTimeout),
            "the VM did not answer in time; the call may or may not have run");
}

// A record torn for a moment (a worker publishing on every call while the supervisor reads
// it) is read from its last whole state and keeps the computer callable; only a record
// torn for `heartbeat_stale` takes it away (docs/architecture.md, "The status board").
// Found by the connect bench: with 16 callers, a few calls were refused -32001.
TEST(WorkerHealth, MomentarilyTornRecordsKeepTheComputerResponsive) {
  Worker worker;
  worker.status =
      std::make_unique<ipc::StatusReader>("/switchboard-test-torn-" + std::to_string(::getpid()));
  ipc::StatusWriter writer(worker.status->segment_name());
  ipc::ComputerStatus ready;
  ready.state = ipc::ComputerState::kReady;
  writer.heartbeat();
  writer.publish(ready);
  std::atomic<bool> stop{false};
  std::thread publishing([&] {
    for (std::uint32_t n = 0; !stop.load(); ++n) {
      ready.in_flight = n % 64;
      writer.publish(ready);
      writer.heartbeat();
    }
  });
  int unresponsive = 0;
  for (int i = 0; i < 200'000; ++i) {
    worker.status->read();
    if (!worker.responsive(std::chrono::seconds(3))) ++unresponsive;
  }
  stop = true;
  publishing.join();
  EXPECT_EQ(unresponsive, 0) << "after " << worker.status->torn_reads() << " torn reads";
}

TEST(ClientTable, FindsTheCallerByTokenAndNobodyElse) {
  config::Client alice{
      .name = "alice", .token = verifier_of("alice-token"), .default_computer = "macmini"};
  alice.grant.wildcard = true;
  config::Client bob{
      .name = "bob", .token = verifier_of("bob-token"), .default_computer = "macmini"};
  const ClientTable table({alice, bob});
  ASSERT_TRUE(table.authenticate("bob-token"));
  EXPECT_EQ(table.authenticate("bob-token")->name, "bob");
  EXPECT_TRUE(table.authenticate("alice-token")->wildcard());
  EXPECT_FALSE(table.authenticate("carol-token"));
  EXPECT_FALSE(table.authenticate(std::nullopt));
}

}  // namespace
}  // namespace sb::supervisor
