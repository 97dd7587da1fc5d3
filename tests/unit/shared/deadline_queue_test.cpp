// Many deadlines on one timer (docs/architecture.md, "Deadlines"): each entry fires once,
// in the order of its time, unless withdrawn; the queue's end silences it.
#include "shared/deadline_queue.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace sb {
namespace {

using namespace std::chrono_literals;
using Clock = DeadlineQueue::Clock;

// Bounds every run: a queue that failed to wake would otherwise hold the test until its
// latest deadline.
constexpr auto kRunBound = 10s;

TEST(DeadlineQueue, EntriesFireOnceInTheOrderOfTheirTime) {
  boost::asio::io_context io;
  DeadlineQueue queue(io);
  std::vector<std::string> fired;
  const auto now = Clock::now();
  auto late = queue.add(now + 30ms, [&] { fired.push_back("late"); });
  auto early = queue.add(now + 1ms, [&] { fired.push_back("early"); });
  auto past = queue.add(now - 1s, [&] { fired.push_back("past"); });
  io.run_for(kRunBound);
  EXPECT_EQ(fired, (std::vector<std::string>{"past", "early", "late"}));
  EXPECT_EQ(queue.size(), 0u);
  EXPECT_FALSE(late.pending());
}

TEST(DeadlineQueue, AWithdrawnEntryNeverFires) {
  boost::asio::io_context io;
  DeadlineQueue queue(io);
  std::vector<std::string> fired;
  const auto now = Clock::now();
  auto reset = queue.add(now + 1ms, [&] { fired.push_back("reset"); });
  auto kept = queue.add(now + 20ms, [&] { fired.push_back("kept"); });
  {
    auto destroyed = queue.add(now + 2ms, [&] { fired.push_back("destroyed"); });
  }
  reset.reset();
  EXPECT_FALSE(reset.pending());
  EXPECT_TRUE(kept.pending());
  EXPECT_EQ(queue.size(), 1u);
  io.run_for(kRunBound);
  EXPECT_EQ(fired, std::vector<std::string>{"kept"});
}

TEST(DeadlineQueue, AMovedEntryFiresAtItsNewTime) {
  boost::asio::io_context io;
  DeadlineQueue queue(io);
  std::vector<std::string> fired;
  const auto now = Clock::now();
  auto later = queue.add(now + 1ms, [&] { fired.push_back("moved later"); });
  auto sooner = queue.add(now + 1h, [&] { fired.push_back("moved sooner"); });
  auto fixed = queue.add(now + 10ms, [&] { fired.push_back("fixed"); });
  later.move_to(now + 40ms);
  sooner.move_to(now + 2ms);  // earlier than the armed time: the timer must follow
  io.run_for(kRunBound);
  EXPECT_EQ(fired, (std::vector<std::string>{"moved sooner", "fixed", "moved later"}));
}

// An entry added earlier than every other must wake the queue on its own time, not at the
// time the timer was armed for.
TEST(DeadlineQueue, AnEarlierEntryWakesTheQueueSooner) {
  boost::asio::io_context io;
  DeadlineQueue queue(io);
  bool distant_fired = false;
  auto distant = queue.add(Clock::now() + 1h, [&] { distant_fired = true; });
  DeadlineQueue::Deadline soon = queue.add(Clock::now() + 1ms, [&] { distant.reset(); });
  io.run_for(kRunBound);  // returns once nothing waits: the distant entry was withdrawn
  EXPECT_FALSE(distant_fired);
  EXPECT_EQ(queue.size(), 0u);
}

TEST(DeadlineQueue, AnEntryMayAddAndWithdrawOthersWhenItFires) {
  boost::asio::io_context io;
  DeadlineQueue queue(io);
  std::vector<std::string> fired;
  const auto now = Clock::now();
  DeadlineQueue::Deadline added;
  auto doomed = queue.add(now + 5ms, [&] { fired.push_back("doomed"); });
  auto first = queue.add(now + 1ms, [&] {
    fired.push_back("first");
    doomed.reset();
    added = queue.add(Clock::now() + 1ms, [&] { fired.push_back("added"); });
  });
  io.run_for(kRunBound);
  EXPECT_EQ(fired, (std::vector<std::string>{"first", "added"}));
}

TEST(DeadlineQueue, NothingFiresOnceTheQueueIsGone) {
  boost::asio::io_context io;
  auto queue = std::make_unique<DeadlineQueue>(io);
  std::vector<std::string> fired;
  const auto now = Clock::now();
  DeadlineQueue::Deadline after;
  auto ender = queue->add(now + 1ms, [&] {
    fired.push_back("ender");
    queue.reset();  // from inside its own firing
  });
  after = queue->add(now + 1ms, [&] { fired.push_back("after"); });
  auto held = queue->add(now - 1s, [&] { fired.push_back("past"); });
  io.run_for(kRunBound);
  EXPECT_EQ(fired, (std::vector<std::string>{"past", "ender"}));
  // The handles outlive their queue and are still safe to use.
  EXPECT_FALSE(after.pending());
  after.move_to(Clock::now());
  after.reset();
}

}  // namespace
}  // namespace sb
