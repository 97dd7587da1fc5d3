// Every call in flight with the worker it went to (supervisor/workers/calls_in_flight.hpp):
// one lookup finds a call's worker, a worker reaches only its own calls, and a worker's
// end takes all of its calls and no other.
#include "supervisor/workers/calls_in_flight.hpp"

#include <gtest/gtest.h>

#include "supervisor/workers/worker.hpp"

namespace sb::supervisor {
namespace {

InFlightCall noting(std::vector<std::uint64_t>& ended, std::uint64_t call_id) {
  return InFlightCall{.done = [&ended, call_id](CallResult) { ended.push_back(call_id); }};
}

TEST(CallsInFlight, ACallsWorkerIsOneLookupAndAWorkerReachesOnlyItsOwnCalls) {
  const auto alpha = std::make_shared<Worker>(config::Computer{});
  const auto beta = std::make_shared<Worker>(config::Computer{});
  std::vector<std::uint64_t> ended;
  CallsInFlight calls;
  EXPECT_TRUE(calls.add(1, alpha, noting(ended, 1)));
  EXPECT_TRUE(calls.add(2, beta, noting(ended, 2)));
  EXPECT_FALSE(calls.add(1, beta, noting(ended, 1))) << "an id is in flight once";
  EXPECT_EQ(calls.owner_of(1), alpha);
  EXPECT_EQ(calls.owner_of(2), beta);
  EXPECT_EQ(calls.owner_of(3), nullptr);
  EXPECT_NE(calls.find(1, *alpha), nullptr);
  EXPECT_EQ(calls.find(1, *beta), nullptr) << "a worker cannot reach another's call";
  auto taken = calls.take(2);
  ASSERT_TRUE(taken);
  taken->done(CallResult{});
  EXPECT_EQ(ended, std::vector<std::uint64_t>{2});
  EXPECT_FALSE(calls.take(2)) << "taken once";
  EXPECT_FALSE(calls.contains(2));
}

TEST(CallsInFlight, AWorkersEndTakesAllItsCallsInOrderAndNoOther) {
  const auto alpha = std::make_shared<Worker>(config::Computer{});
  const auto beta = std::make_shared<Worker>(config::Computer{});
  std::vector<std::uint64_t> ended;
  CallsInFlight calls;
  calls.add(5, alpha, noting(ended, 5));
  calls.add(3, alpha, noting(ended, 3));
  calls.add(4, beta, noting(ended, 4));
  for (auto& call : calls.take_all_at(*alpha)) call.done(CallResult{});
  EXPECT_EQ(ended, (std::vector<std::uint64_t>{3, 5}));
  EXPECT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls.owner_of(4), beta);
}

TEST(CallsInFlight, ACallWhoseWorkerIsGoneHasNoOwner) {
  std::vector<std::uint64_t> ended;
  CallsInFlight calls;
  auto gone = std::make_shared<Worker>(config::Computer{});
  calls.add(7, gone, noting(ended, 7));
  gone.reset();
  EXPECT_EQ(calls.owner_of(7), nullptr);
  EXPECT_TRUE(calls.take(7)) << "still taken, to be ended";
}

}  // namespace
}  // namespace sb::supervisor
