#include "supervisor/pods/redial_policy.hpp"

namespace sb::supervisor {

namespace {
constexpr int kReplacedRuntime = 4006;
constexpr std::chrono::milliseconds kNeverStable{0};
}  // namespace

bool is_stop_code(int code) {
  return code >= 4000 && code < 5000 && code != kReplacedRuntime;
}

bool is_credential_refusal(int status) {
  return status == 401 || status == 403 || status == 429;
}

RedialPolicy::RedialPolicy(const PodTimings& timings)
    : timings_(timings),
      backoff_(timings.first_backoff, timings.max_backoff, timings.stable_session) {}

RedialDecision RedialPolicy::next(const AttemptOutcome& outcome) {
  RedialDecision decision;
  switch (outcome.kind) {
    case AttemptOutcome::Kind::kClosed:
      if (outcome.close_code && is_stop_code(*outcome.close_code)) {
        decision.stop = true;
        return decision;
      }
      decision.wait = backoff_.next(outcome.lasted);
      break;
    case AttemptOutcome::Kind::kRefused:
      // Only a session that lasted counts as stable, never a refusal or a failure.
      decision.wait = backoff_.next(kNeverStable);
      if (is_credential_refusal(outcome.status)) {
        // Only a fresh grant helps: a fixed wait, while the backoff still grows.
        decision.credential_refusal = true;
        decision.wait = timings_.refusal_wait;
      }
      break;
    case AttemptOutcome::Kind::kFailed:
      decision.wait = backoff_.next(kNeverStable);
      break;
  }
  return decision;
}

}  // namespace sb::supervisor
