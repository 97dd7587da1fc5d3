// What became of an attached computer's socket handed to its worker (docs/protocol.md,
// "Attach"): the registry decides it, and the HTTP side answers the computer by it.
#pragma once

namespace sb::supervisor {

enum class HandOver {
  kDone,               // the socket is the worker's now
  kWorkerUnavailable,  // 503: the worker is restarting
  kRevoked,            // the secret was rotated out between the check and the hand-over: 4003
};

}  // namespace sb::supervisor
