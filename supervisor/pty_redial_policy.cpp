#include "supervisor/pty_redial_policy.hpp"

#include <algorithm>

namespace sb::supervisor {

namespace {
constexpr int kReplacedRuntime = 4006;
}  // namespace

bool is_stop_code(int code) {
  return code >= 4000 && code < 5000 && code != kReplacedRuntime;
}

bool is_credential_refusal(int status) {
  return status == 401 || status == 403 || status == 429;
}

RedialPolicy::RedialPolicy(const PtyTimings& timings)
    : timings_(timings), backoff_(timings.first_backoff) {}

RedialDecision RedialPolicy::next(const AttemptOutcome& outcome) {
  RedialDecision decision;
  switch (outcome.kind) {
    case AttemptOutcome::Kind::kClosed:
      if (outcome.close_code && is_stop_code(*outcome.close_code)) {
        decision.stop = true;
        return decision;
      }
      if (outcome.lasted >= timings_.stable_session) backoff_ = timings_.first_backoff;
      decision.wait = backoff_;
      break;
    case AttemptOutcome::Kind::kRefused:
      if (is_credential_refusal(outcome.status)) {
        decision.credential_refusal = true;
        decision.wait = timings_.refusal_wait;
      } else {
        decision.wait = backoff_;
      }
      break;
    case AttemptOutcome::Kind::kFailed:
      decision.wait = backoff_;
      break;
  }
  backoff_ = std::min(backoff_ * 2, timings_.max_backoff);
  return decision;
}

std::chrono::milliseconds jittered(std::chrono::milliseconds wait, double r) {
  r = std::clamp(r, 0.0, 1.0);
  return std::chrono::milliseconds(static_cast<std::chrono::milliseconds::rep>(
      static_cast<double>(wait.count()) * (0.8 + 0.4 * r)));
}

}  // namespace sb::supervisor
