// The pending table's two caps and id discipline (docs/protocol.md, "In-flight caps", "Ids").
#include "worker/pending_calls.hpp"

#include <gtest/gtest.h>

namespace sb::worker {
namespace {

PendingCall call_from(const std::string& caller, std::uint64_t call_id = 1) {
  return PendingCall{.call_id = call_id, .caller = caller};
}

TEST(PendingCalls, DefaultShareIsHalfTheSocketCapRoundedUp) {
  EXPECT_EQ(PendingCalls(8).default_caller_cap(), 4);
  EXPECT_EQ(PendingCalls(4).default_caller_cap(), 2);
  EXPECT_EQ(PendingCalls(3).default_caller_cap(), 2);
  EXPECT_EQ(PendingCalls(1).default_caller_cap(), 1);
  EXPECT_EQ(PendingCalls(64).default_caller_cap(), 32);
}

TEST(PendingCalls, OneCallerCannotTakeMoreThanItsShare) {
  PendingCalls pending(8);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(pending.add(call_from("muse"), 0));
  EXPECT_FALSE(pending.add(call_from("muse"), 0)) << "over the default share";
  EXPECT_TRUE(pending.add(call_from("connect"), 0)) << "room is left for another caller";
}

TEST(PendingCalls, TheComputerWideCapBindsFirst) {
  PendingCalls pending(2);
  ASSERT_TRUE(pending.add(call_from("a"), 10));
  ASSERT_TRUE(pending.add(call_from("a"), 10));
  EXPECT_FALSE(pending.add(call_from("b"), 10));
  EXPECT_EQ(pending.size(), 2u);
}

// A reply waiting in the supervisor for a slow caller still counts, against both caps,
// until the supervisor says it has left (docs/robustness.md, "Memory").
TEST(PendingCalls, AReplyNotYetDeliveredKeepsItsPlace) {
  PendingCalls pending(2);
  const auto first = pending.add(call_from("a", 11), 1);
  ASSERT_TRUE(first);
  ASSERT_TRUE(pending.take(*first));
  pending.hold_until_delivered(11, "a");
  EXPECT_EQ(pending.size(), 1u);
  EXPECT_FALSE(pending.add(call_from("a", 12), 1)) << "the caller's share is still taken";
  ASSERT_TRUE(pending.add(call_from("b", 13), 1));
  EXPECT_FALSE(pending.add(call_from("c", 14), 5)) << "and so is the computer's place";
  pending.delivered(99);  // unknown: nothing changes
  EXPECT_EQ(pending.size(), 2u);
  pending.delivered(11);
  EXPECT_EQ(pending.size(), 1u);
  EXPECT_TRUE(pending.add(call_from("a", 12), 1));
  pending.delivered(11);  // twice: still nothing more given back
  EXPECT_EQ(pending.size(), 2u);
}

TEST(PendingCalls, TakingACallGivesItsShareBack) {
  PendingCalls pending(8);
  const auto first = pending.add(call_from("a", 11), 1);
  ASSERT_TRUE(first);
  EXPECT_FALSE(pending.add(call_from("a", 12), 1));
  ASSERT_TRUE(pending.take(*first));
  EXPECT_TRUE(pending.add(call_from("a", 13), 1));
  EXPECT_FALSE(pending.take(*first)) << "an id is taken once";
}

TEST(PendingCalls, IdsStartAtOneAndAreNeverReused) {
  PendingCalls pending(8);
  const auto one = pending.add(call_from("a"), 0);
  ASSERT_EQ(one, 1u);
  pending.take(*one);
  EXPECT_EQ(pending.add(call_from("a"), 0), 2u);
}

TEST(PendingCalls, FindsACallByTheSupervisorsId) {
  PendingCalls pending(8);
  const auto id = pending.add(call_from("a", 99), 0);
  EXPECT_EQ(pending.find_by_call_id(99), id);
  EXPECT_FALSE(pending.find_by_call_id(98));
}

TEST(PendingCalls, TakeAllEmptiesTheTableAndEveryShare) {
  PendingCalls pending(2);
  pending.add(call_from("a"), 0);
  pending.add(call_from("b"), 0);
  EXPECT_EQ(pending.take_all().size(), 2u);
  EXPECT_EQ(pending.size(), 0u);
  EXPECT_TRUE(pending.add(call_from("a"), 1));
}

}  // namespace
}  // namespace sb::worker
