// The callers' streams of the messages that belong to no call (docs/protocol.md,
// "Subscriptions"): at most a caller's maximum open, whatever sessions it names, and a
// computer's broadcast delivered a few streams per turn of the loop, in order, so that it
// never holds the loop for long.
#include "supervisor/mcp/stream_board.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <optional>
#include <string>
#include <vector>

namespace sb::supervisor {
namespace {

TEST(StreamBoard, ACallerHoldsAtMostItsMaximumWhateverSessionsItNames) {
  boost::asio::io_context io;
  StreamBoard board(io.get_executor(), 2);
  const auto a = board.open({"alpha", "alice", "a"}, [](std::string) {});
  ASSERT_TRUE(a);
  EXPECT_FALSE(board.open({"alpha", "alice", "a"}, [](std::string) {})) << "open already";
  EXPECT_FALSE(board.full("alice"));
  ASSERT_TRUE(board.open({"beta", "alice", "b"}, [](std::string) {}));
  EXPECT_TRUE(board.full("alice"));
  EXPECT_FALSE(board.open({"alpha", "alice", "c"}, [](std::string) {}));
  EXPECT_TRUE(board.open({"alpha", "bob", "a"}, [](std::string) {})) << "another caller's room";
  board.close({"alpha", "alice", "a"}, *a + 100);  // not that stream's id: nothing
  EXPECT_TRUE(board.full("alice"));
  board.close({"alpha", "alice", "a"}, *a);
  EXPECT_EQ(board.held_by("alice"), 1u);
  EXPECT_TRUE(board.open({"alpha", "alice", "c"}, [](std::string) {}));
}

TEST(StreamBoard, ABroadcastGoesOutAFewStreamsPerTurnAndInOrder) {
  boost::asio::io_context io;
  StreamBoard board(io.get_executor(), 1000);
  constexpr std::size_t kStreams = 100;
  std::vector<std::vector<std::string>> got(kStreams);
  for (std::size_t i = 0; i < kStreams; ++i) {
    board.open({"alpha", "caller-" + std::to_string(1000 + i), ""},
               [&got, i](std::string message) { got[i].push_back(std::move(message)); });
  }
  std::vector<std::string> others;
  board.open({"beta", "caller", ""}, [&others](std::string message) { others.push_back(message); });

  EXPECT_EQ(board.broadcast("alpha", "one"), kStreams);
  EXPECT_EQ(board.broadcast("alpha", "two"), kStreams);
  EXPECT_EQ(board.broadcast("gamma", "nobody's"), 0u);
  const auto count = [&] {
    std::size_t all = 0;
    for (const auto& messages : got) all += messages.size();
    return all;
  };
  EXPECT_EQ(count(), 0u) << "nothing before the loop turns";
  ASSERT_EQ(io.poll_one(), 1u);
  EXPECT_EQ(count(), StreamBoard::kDeliveriesPerTurn);
  io.run();
  EXPECT_EQ(count(), 2 * kStreams);
  for (const auto& messages : got) EXPECT_EQ(messages, (std::vector<std::string>{"one", "two"}));
  EXPECT_TRUE(others.empty()) << "another computer's streams get nothing";
}

TEST(StreamBoard, ABroadcastPastTheWaitingOnesIsDropped) {
  boost::asio::io_context io;
  StreamBoard board(io.get_executor(), 10);
  std::size_t got = 0;
  board.open({"alpha", "alice", ""}, [&got](std::string) { ++got; });
  for (std::size_t i = 0; i < StreamBoard::kMaxWaitingBroadcasts; ++i)
    EXPECT_EQ(board.broadcast("alpha", "m"), 1u);
  EXPECT_EQ(board.broadcast("alpha", "one too many"), 0u);
  io.run();
  EXPECT_EQ(got, StreamBoard::kMaxWaitingBroadcasts);
  EXPECT_EQ(board.broadcast("alpha", "room again"), 1u);
}

TEST(StreamBoard, AStreamClosedByItsSinkMidBroadcastMovesNothing) {
  boost::asio::io_context io;
  StreamBoard board(io.get_executor(), 10);
  std::vector<std::string> order;
  std::optional<std::uint64_t> second;
  board.open({"alpha", "a", ""}, [&](std::string) {
    order.push_back("a");
    board.close({"alpha", "b", ""}, *second);
  });
  second = board.open({"alpha", "b", ""}, [&](std::string) { order.push_back("b"); });
  board.open({"alpha", "c", ""}, [&](std::string) { order.push_back("c"); });
  board.broadcast("alpha", "m");
  io.run();
  EXPECT_EQ(order, (std::vector<std::string>{"a", "c"}));
}

}  // namespace
}  // namespace sb::supervisor
