// When a [[pty_attach]] dialer dials again, and when it stops for good (docs/protocol.md,
// "Pod redial"): pure logic, no I/O, so that every rule is unit-tested without a clock.
#pragma once

#include <chrono>
#include <optional>

#include "shared/backoff.hpp"

namespace sb::supervisor {

// Every duration a dialer uses. The defaults are those of docs/protocol.md ("Pod sockets",
// "Pod redial") and are what `serve` uses; tests pass shorter ones.
struct PodTimings {
  std::chrono::milliseconds first_backoff{1'000};
  std::chrono::milliseconds max_backoff{60'000};
  std::chrono::milliseconds stable_session{60'000};  // an attempt this long resets the backoff
  std::chrono::milliseconds refusal_wait{60'000};    // after 401, 403 or 429
  std::chrono::milliseconds ping_interval{20'000};   // our WebSocket ping; first at +20 s
  std::chrono::milliseconds idle_limit{70'000};      // silence past this ends the session
  // A dial that runs out of either is a failed one: TCP connect, then TLS and upgrade.
  std::chrono::milliseconds connect_timeout{15'000};
  std::chrono::milliseconds handshake_timeout{15'000};
};

// A close code after which the attacher ends for the life of the process: 4000..4999 except
// 4006 (the pod was replaced; its successor wants a fresh grant, so keep dialling).
bool is_stop_code(int code);
// An upgrade refusal only a fresh grant can fix: 401, 403, 429.
bool is_credential_refusal(int status);

// How one attempt ended.
struct AttemptOutcome {
  enum class Kind {
    kClosed,   // upgraded, then the session ended (close frame, drop, idle)
    kRefused,  // the upgrade was answered with a non-101 status
    kFailed,   // no answer: secret unreadable, bad URL, DNS, TCP, TLS, timeout
  };
  Kind kind = Kind::kFailed;
  std::optional<int> close_code;        // kClosed: the pod's code; none for a drop
  int status = 0;                       // kRefused: the HTTP status
  std::chrono::milliseconds lasted{0};  // from the start of the dial to the end

  static AttemptOutcome closed(std::optional<int> code, std::chrono::milliseconds lasted) {
    return {Kind::kClosed, code, 0, lasted};
  }
  static AttemptOutcome refused(int status) { return {Kind::kRefused, std::nullopt, status}; }
  static AttemptOutcome failed() { return {Kind::kFailed}; }
};

struct RedialDecision {
  bool stop = false;
  bool credential_refusal = false;
  std::chrono::milliseconds wait{0};  // before jitter
};

// The backoff state of one attacher ("Pod redial"): starts at first_backoff, doubles after
// every attempt that does not stop (credential refusals included), capped at max_backoff,
// and resets when a session lasted stable_session or longer.
class RedialPolicy {
 public:
  explicit RedialPolicy(const PodTimings& timings = {});
  RedialDecision next(const AttemptOutcome& outcome);
  std::chrono::milliseconds backoff() const { return backoff_.current(); }

 private:
  PodTimings timings_;
  Backoff backoff_;  // shared/backoff.hpp: the same as every dialer's
};

}  // namespace sb::supervisor
