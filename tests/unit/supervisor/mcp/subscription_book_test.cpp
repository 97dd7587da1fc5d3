// Who is subscribed to which resource of which computer session (docs/protocol.md,
// "Subscriptions"): the first subscriber and the last one named, a caller bounded, a
// session that ended holding nothing, the book carried across a switch, and a subscriber
// without a stream lapsing.
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

// A subscriber without a stream loses everything once it has been without one for the
// window, counted from the first time it was found so; a stream, even for a moment, starts
// the count again.
TEST(SubscriptionBook, ASubscriberWithoutAStreamLapsesAfterTheWindow) {
  SubscriptionBook book(64);
  book.add(kAlpha, "u", kAlice);
  book.add(kAlpha, "u", kBob);
  book.add(kAlpha, "v", kAlice);
  bool bob_streams = true;
  const auto has_stream = [&](const std::string& computer, const Subscriber& who) {
    EXPECT_EQ(computer, "alpha");
    return who == kBob && bob_streams;
  };
  const SteadyTime start{};
  const auto window = std::chrono::seconds(30);
  EXPECT_TRUE(book.lapse_streamless(has_stream, start, window).empty());
  EXPECT_TRUE(book.lapse_streamless(has_stream, start + std::chrono::seconds(29), window).empty());
  const auto lapsed = book.lapse_streamless(has_stream, start + window, window);
  ASSERT_EQ(lapsed.size(), 1u);
  EXPECT_EQ(lapsed[0].who, kAlice);
  EXPECT_EQ(lapsed[0].unsubscribed, std::vector<std::string>{"v"}) << "bob still holds u";
  EXPECT_EQ(book.held_by("alice"), 0u);
  EXPECT_EQ(book.subscribers(kAlpha, "u"), std::vector<Subscriber>{kBob});

  bob_streams = false;
  const SteadyTime later = start + std::chrono::minutes(5);
  EXPECT_TRUE(book.lapse_streamless(has_stream, later, window).empty());
  bob_streams = true;
  EXPECT_TRUE(book.lapse_streamless(has_stream, later + window, window).empty());
  bob_streams = false;
  EXPECT_TRUE(book.lapse_streamless(has_stream, later + window + window / 2, window).empty())
      << "the stream started the count again";
  const auto bobs = book.lapse_streamless(has_stream, later + 3 * window, window);
  ASSERT_EQ(bobs.size(), 1u);
  EXPECT_EQ(bobs[0].unsubscribed, std::vector<std::string>{"u"});
}

}  // namespace
}  // namespace sb::supervisor
