// The call book (docs/protocol.md, "Cancellation"): a caller names only its own calls, by
// computer, client and session; an ambiguous name cancels nothing; routed requests are
// answered once, by their owner, and vanish with their call.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "supervisor/http/origin_policy.hpp"
#include "supervisor/mcp/call_book.hpp"

namespace sb::supervisor {
namespace {

const CallOwner kAlice{"alpha", "alice", "s1"};

TEST(CallBook, CancelsTheOneMatchingCallWithItsReason) {
  CallBook book;
  std::vector<std::string> reasons;
  book.open(kAlice, "7", 100, [&](const std::string& reason) { reasons.push_back(reason); });
  EXPECT_TRUE(book.cancel(kAlice, "7", "user hit stop"));
  EXPECT_EQ(reasons, std::vector<std::string>{"user hit stop"});
  EXPECT_EQ(book.size(), 0u);
  EXPECT_FALSE(book.cancel(kAlice, "7", "again"));  // already gone
}

TEST(CallBook, NeverCancelsAnotherOwnersCall) {
  CallBook book;
  int cancelled = 0;
  book.open(kAlice, "7", 100, [&](const std::string&) { ++cancelled; });
  EXPECT_FALSE(book.cancel({"alpha", "bob", "s1"}, "7", "x"));
  EXPECT_FALSE(book.cancel({"alpha", "alice", "s2"}, "7", "x"));
  EXPECT_FALSE(book.cancel({"beta", "alice", "s1"}, "7", "x"));
  EXPECT_FALSE(book.cancel(kAlice, "\"7\"", "x"));  // the string "7" is another id
  EXPECT_EQ(cancelled, 0);
}

TEST(CallBook, AnAmbiguousIdCancelsNothing) {
  CallBook book;
  int cancelled = 0;
  book.open(kAlice, "1", 100, [&](const std::string&) { ++cancelled; });
  book.open(kAlice, "1", 101, [&](const std::string&) { ++cancelled; });
  EXPECT_FALSE(book.cancel(kAlice, "1", "x"));
  EXPECT_EQ(cancelled, 0);
}

TEST(CallBook, RoutedRequestsAreAnsweredOnceByTheirOwner) {
  CallBook book;
  const auto entry = book.open(kAlice, "1", 100, {});
  const auto routed = book.route_request(entry, 5);
  ASSERT_TRUE(routed);
  EXPECT_FALSE(book.take_answer({"alpha", "bob", "s1"}, *routed));
  const auto answer = book.take_answer(kAlice, *routed);
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->call_id, 100u);
  EXPECT_EQ(answer->key, 5u);
  EXPECT_FALSE(book.take_answer(kAlice, *routed));
}

TEST(CallBook, RoutedRequestsEndWithTheirCall) {
  CallBook book;
  const auto entry = book.open(kAlice, "1", 100, {});
  const auto routed = book.route_request(entry, 5);
  ASSERT_TRUE(routed);
  book.close(entry);
  EXPECT_FALSE(book.take_answer(kAlice, *routed));
  EXPECT_FALSE(book.route_request(entry, 6));
}

TEST(OriginPolicy, LoopbackOriginsOnly) {
  EXPECT_TRUE(loopback_origin("http://localhost"));
  EXPECT_TRUE(loopback_origin("http://localhost:6274"));
  EXPECT_TRUE(loopback_origin("https://127.0.0.1:3000"));
  EXPECT_TRUE(loopback_origin("http://[::1]:8080"));
  EXPECT_FALSE(loopback_origin("http://localhost.evil.example"));
  EXPECT_FALSE(loopback_origin("http://127.0.0.1.nip.io"));
  EXPECT_FALSE(loopback_origin("http://localhost:"));
  EXPECT_FALSE(loopback_origin("http://localhost:80/path"));
  EXPECT_FALSE(loopback_origin("file://localhost"));
  EXPECT_FALSE(loopback_origin("null"));
}

TEST(OriginPolicy, ListedOriginsMatchExactly) {
  config::Config config;
  config.allowed_origins = {"https://app.example"};
  EXPECT_TRUE(origin_allowed(config, "https://app.example"));
  EXPECT_FALSE(origin_allowed(config, "https://app.example:443"));
  EXPECT_FALSE(origin_allowed(config, "http://app.example"));
  EXPECT_FALSE(origin_allowed(config, "https://evil.example"));
}

}  // namespace
}  // namespace sb::supervisor
