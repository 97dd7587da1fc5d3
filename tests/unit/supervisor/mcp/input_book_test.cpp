// The input-required rounds (docs/protocol.md, "Input required"): a round is found only
// with the state it was given under, by the caller and computer it was given to, once; a
// state the book never wrote is not one of its own; the book is bounded.
#include "supervisor/mcp/input_book.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "supervisor/mcp/input_bridge.hpp"

namespace sb::supervisor {
namespace {

const CallOwner kAlice{.computer = "alpha", .caller = "alice"};

TEST(InputBook, ARoundIsTakenOnceByItsOwnerWithItsState) {
  InputBook book;
  auto call = std::make_shared<BridgedCall>();
  const auto state = book.open(kAlice, call);
  ASSERT_TRUE(state);
  EXPECT_TRUE(state->starts_with("sb1."));
  EXPECT_EQ(book.take(*state, kAlice), call);
  EXPECT_EQ(book.take(*state, kAlice), nullptr) << "a round is over once taken";
  EXPECT_EQ(book.size(), 0u);
}

TEST(InputBook, AnotherCallerOrComputerOrAForgedSecretFindsNothingAndLeavesTheRound) {
  InputBook book;
  auto call = std::make_shared<BridgedCall>();
  const std::string state = *book.open(kAlice, call);
  EXPECT_EQ(book.take(state, CallOwner{.computer = "alpha", .caller = "bob"}), nullptr);
  EXPECT_EQ(book.take(state, CallOwner{.computer = "beta", .caller = "alice"}), nullptr);
  std::string forged = state;
  forged.back() = forged.back() == 'a' ? 'b' : 'a';
  EXPECT_EQ(book.take(forged, kAlice), nullptr);
  EXPECT_EQ(book.take(state.substr(0, state.size() - 1), kAlice), nullptr);
  EXPECT_EQ(book.take(state, kAlice), call) << "none of the attempts ended the round";
}

TEST(InputBook, AStateTheBookNeverWroteIsNotOneOfItsOwn) {
  EXPECT_FALSE(InputBook::round_of("opaque-state-of-a-computer"));
  EXPECT_FALSE(InputBook::round_of("sb1."));
  EXPECT_FALSE(InputBook::round_of("sb1.x.abc"));
  EXPECT_FALSE(InputBook::round_of("sb1.7"));
  EXPECT_FALSE(InputBook::round_of("sb1.99999999999999999999999.abc"));
  EXPECT_EQ(InputBook::round_of("sb1.7.abc"), 7u);
  InputBook book;
  EXPECT_EQ(book.take("sb1.1.abc", kAlice), nullptr);
}

TEST(InputBook, AClosedRoundOrAGoneCallFindsNothing) {
  InputBook book;
  auto call = std::make_shared<BridgedCall>();
  const std::string closed = *book.open(kAlice, call);
  book.close(*InputBook::round_of(closed));
  EXPECT_EQ(book.take(closed, kAlice), nullptr);
  const std::string gone = *book.open(kAlice, call);
  call.reset();
  EXPECT_EQ(book.take(gone, kAlice), nullptr);
}

TEST(InputBook, IsBounded) {
  InputBook book;
  auto call = std::make_shared<BridgedCall>();
  for (std::size_t i = 0; i < InputBook::kMaxRounds; ++i) ASSERT_TRUE(book.open(kAlice, call));
  EXPECT_FALSE(book.open(kAlice, call));
  EXPECT_EQ(book.size(), InputBook::kMaxRounds);
  call.reset();
  EXPECT_TRUE(book.open(kAlice, std::make_shared<BridgedCall>()))
      << "rounds of calls that are gone make room";
  EXPECT_EQ(book.size(), 1u) << "only the new round is left";
}

}  // namespace
}  // namespace sb::supervisor
