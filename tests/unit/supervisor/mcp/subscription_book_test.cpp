// Who is subscribed to which resource of which computer session (docs/protocol.md,
// "Subscriptions"): the first subscriber and the last one named, a caller bounded, a
// session that ended holding nothing, and the book carried across a switch.
#include "supervisor/mcp/subscription_book.hpp"

#include <gtest/gtest.h>

namespace sb::supervisor {
namespace {

using Added = SubscriptionBook::Added;

const SessionKey kAlpha{"alpha", 100};
const Subscriber kAlice{"alice", "s-1"};
const Subscriber kAliceElsewhere{"alice", "s-2"};
const Subscriber kBob{"bob", ""};

TEST(SubscriptionBook, TheFirstSubscriberAndTheLastAreNamed) {
  SubscriptionBook book(64);
  EXPECT_EQ(book.add(kAlpha, "u", kAlice), Added::kFirst);
  EXPECT_EQ(book.add(kAlpha, "u", kBob), Added::kAnother);
  EXPECT_EQ(book.add(kAlpha, "u", kAlice), Added::kAlready);
  EXPECT_EQ(book.subscribers(kAlpha, "u"), (std::vector<Subscriber>{kAlice, kBob}));
  EXPECT_FALSE(book.remove(kAlpha, "u", kAlice));
  EXPECT_FALSE(book.remove(kAlpha, "u", kAlice)) << "no longer subscribed";
  EXPECT_TRUE(book.remove(kAlpha, "u", kBob));
  EXPECT_TRUE(book.subscribers(kAlpha, "u").empty());
  EXPECT_EQ(book.held_by("alice"), 0u);
}

TEST(SubscriptionBook, ACallerHoldsAtMostItsMaximumOverAllItsSessions) {
  SubscriptionBook book(2);
  EXPECT_EQ(book.add(kAlpha, "u1", kAlice), Added::kFirst);
  EXPECT_EQ(book.add(kAlpha, "u2", kAliceElsewhere), Added::kFirst);
  EXPECT_EQ(book.add(kAlpha, "u3", kAlice), Added::kFull);
  EXPECT_TRUE(book.subscribers(kAlpha, "u3").empty()) << "nothing was added";
  EXPECT_EQ(book.add(kAlpha, "u3", kBob), Added::kFirst) << "another caller is not bounded by it";
  book.remove(kAlpha, "u1", kAlice);
  EXPECT_EQ(book.add(kAlpha, "u3", kAlice), Added::kAnother);
}

TEST(SubscriptionBook, RemovingASessionsSubscriptionsNamesTheURIsLeftWithoutSubscriber) {
  SubscriptionBook book(64);
  book.add(kAlpha, "shared", kAlice);
  book.add(kAlpha, "shared", kBob);
  book.add(kAlpha, "own", kAlice);
  book.add(kAlpha, "other-session", kAliceElsewhere);
  EXPECT_EQ(book.remove_all(kAlpha, kAlice), std::vector<std::string>{"own"});
  EXPECT_EQ(book.subscribers(kAlpha, "shared"), std::vector<Subscriber>{kBob});
  EXPECT_EQ(book.subscribers(kAlpha, "other-session"), std::vector<Subscriber>{kAliceElsewhere});
  EXPECT_EQ(book.held_by("alice"), 1u);
}

TEST(SubscriptionBook, ANewSessionOfTheComputerHoldsNothingAndFreesTheCallers) {
  SubscriptionBook book(1);
  book.add(kAlpha, "u", kAlice);
  const SessionKey next{"alpha", 200};
  EXPECT_TRUE(book.subscribers(next, "u").empty());
  EXPECT_EQ(book.add(next, "u", kAlice), Added::kFirst) << "the old session's was forgotten";
  EXPECT_TRUE(book.subscribers(kAlpha, "u").empty());
}

TEST(SubscriptionBook, EntriesAreTakenBackAsTheyWere) {
  SubscriptionBook book(64);
  book.add(kAlpha, "u", kAlice);
  book.add(kAlpha, "u", kBob);
  book.add({"beta", 7}, "v", kAlice);
  SubscriptionBook next(1);
  next.restore(book.entries());
  EXPECT_EQ(next.subscribers(kAlpha, "u"), (std::vector<Subscriber>{kAlice, kBob}));
  EXPECT_EQ(next.subscribers({"beta", 7}, "v"), std::vector<Subscriber>{kAlice});
  EXPECT_EQ(next.held_by("alice"), 2u) << "taken back whatever the new limit";
  EXPECT_EQ(next.add({"beta", 7}, "w", kAlice), Added::kFull);
}

}  // namespace
}  // namespace sb::supervisor
