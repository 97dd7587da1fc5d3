// The [[pty_attach]] dialer's pure parts: which outcomes stop it, how long it waits before
// the next dial (docs/protocol.md, "Pod redial"), and how it turns the url and
// the secret file into a request.
#include <gtest/gtest.h>

#include "shared/secret_file.hpp"
#include "shared/text.hpp"
#include "supervisor/pods/pod_dialer.hpp"
#include "supervisor/pods/redial_policy.hpp"

namespace sb::supervisor {
namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;

TEST(PodStopCodes, AreEvery4xxxExcept4006) {
  for (int code : {4000, 4001, 4002, 4003, 4004, 4005, 4010, 4999})
    EXPECT_TRUE(is_stop_code(code)) << code;
  for (int code : {4006, 1000, 1001, 1005, 1006, 1011, 3999, 5000})
    EXPECT_FALSE(is_stop_code(code)) << code;
}

TEST(PodCredentialRefusals, AreExactly401And403And429) {
  for (int status : {401, 403, 429}) EXPECT_TRUE(is_credential_refusal(status)) << status;
  for (int status : {400, 404, 500, 502, 503, 504, 200})
    EXPECT_FALSE(is_credential_refusal(status)) << status;
}

TEST(PodRedialPolicy, FollowsTheSpecTimeline502_502_401_502) {
  // Dials at ≈0 s, 1 s, 3 s, 63 s, then the next after ≈8 s.
  RedialPolicy policy;
  EXPECT_EQ(policy.next(AttemptOutcome::refused(502)).wait, 1s);
  EXPECT_EQ(policy.next(AttemptOutcome::refused(502)).wait, 2s);
  const RedialDecision refused = policy.next(AttemptOutcome::refused(401));
  EXPECT_TRUE(refused.credential_refusal);
  EXPECT_FALSE(refused.stop);
  EXPECT_EQ(refused.wait, 60s);
  EXPECT_EQ(policy.next(AttemptOutcome::refused(502)).wait, 8s);
}

TEST(PodRedialPolicy, DoublesToTheCapAfterFailures) {
  RedialPolicy policy;
  std::vector<milliseconds> waits;
  for (int i = 0; i < 9; ++i) waits.push_back(policy.next(AttemptOutcome::failed()).wait);
  EXPECT_EQ(waits, (std::vector<milliseconds>{1s, 2s, 4s, 8s, 16s, 32s, 60s, 60s, 60s}));
}

TEST(PodRedialPolicy, ResetsOnlyAfterASessionThatLastedAMinute) {
  RedialPolicy policy;
  policy.next(AttemptOutcome::failed());
  policy.next(AttemptOutcome::failed());
  policy.next(AttemptOutcome::failed());  // backoff now 8 s
  // A short session does not reset it (an upgrade alone is not stability).
  EXPECT_EQ(policy.next(AttemptOutcome::closed(std::nullopt, 59s)).wait, 8s);
  // Five minutes up, then a plain drop: redial after about a second.
  EXPECT_EQ(policy.next(AttemptOutcome::closed(std::nullopt, 300s)).wait, 1s);
  EXPECT_EQ(policy.next(AttemptOutcome::closed(1000, 60s)).wait, 1s);
  EXPECT_EQ(policy.backoff(), 2s);
}

TEST(PodRedialPolicy, A4006RedialsAfterTheCurrentBackoffAndOther4xxxStop) {
  RedialPolicy policy;
  const RedialDecision replaced = policy.next(AttemptOutcome::closed(4006, 2s));
  EXPECT_FALSE(replaced.stop);
  EXPECT_EQ(replaced.wait, 1s);
  const RedialDecision stop = policy.next(AttemptOutcome::closed(4010, 2s));
  EXPECT_TRUE(stop.stop);
  EXPECT_TRUE(policy.next(AttemptOutcome::closed(4999, 2s)).stop);
  EXPECT_FALSE(policy.next(AttemptOutcome::closed(1001, 2s)).stop);
  EXPECT_FALSE(policy.next(AttemptOutcome::closed(std::nullopt, 2s)).stop);
}

TEST(PodRedialPolicy, CredentialRefusalsWaitAMinuteAndStillDouble) {
  RedialPolicy policy;
  EXPECT_EQ(policy.next(AttemptOutcome::refused(403)).wait, 60s);
  EXPECT_EQ(policy.next(AttemptOutcome::refused(429)).wait, 60s);
  EXPECT_EQ(policy.backoff(), 4s);
}

TEST(PodRedialPolicy, UsesTheInjectedTimings) {
  RedialPolicy policy(PodTimings{
      .first_backoff = 10ms, .max_backoff = 40ms, .stable_session = 100ms, .refusal_wait = 500ms});
  EXPECT_EQ(policy.next(AttemptOutcome::failed()).wait, 10ms);
  EXPECT_EQ(policy.next(AttemptOutcome::refused(401)).wait, 500ms);
  EXPECT_EQ(policy.next(AttemptOutcome::failed()).wait, 40ms);
  EXPECT_EQ(policy.next(AttemptOutcome::closed(std::nullopt, 100ms)).wait, 10ms);
}

TEST(PodRedialPolicy, TheDefaultsAreTheSpecs) {
  const PodTimings timings;
  EXPECT_EQ(timings.first_backoff, 1s);
  EXPECT_EQ(timings.max_backoff, 60s);
  EXPECT_EQ(timings.stable_session, 60s);
  EXPECT_EQ(timings.refusal_wait, 60s);
  EXPECT_EQ(timings.ping_interval, 20s);
  EXPECT_EQ(timings.idle_limit, 70s);
}

TEST(PodJitter, IsPlusOrMinusTwentyPercent) {
  EXPECT_EQ(jittered(1000ms, 0.0), 800ms);
  EXPECT_EQ(jittered(1000ms, 0.5), 1000ms);
  EXPECT_EQ(jittered(1000ms, 1.0), 1200ms);
  EXPECT_EQ(jittered(60s, 1.0), 72s);
  EXPECT_EQ(jittered(1000ms, 7.0), 1200ms);  // clamped
  EXPECT_EQ(jittered(1000ms, -1.0), 800ms);
}

TEST(PodSecret, IsTrimmedAndMustFitInAHeader) {
  EXPECT_EQ(sb::trim("  abc123\r\n\n"), "abc123");
  EXPECT_EQ(sb::trim("\n"), "");
  EXPECT_EQ(sb::trim("a b"), "a b");
  EXPECT_TRUE(valid_header_value("abc123"));
  EXPECT_TRUE(valid_header_value(""));
  EXPECT_TRUE(valid_header_value("a\tb"));
  EXPECT_FALSE(valid_header_value("abc\r\nX-Injected: 1"));
  EXPECT_FALSE(valid_header_value(std::string("a\0b", 3)));
  EXPECT_FALSE(valid_header_value("a\x7f"));
}

}  // namespace
}  // namespace sb::supervisor
