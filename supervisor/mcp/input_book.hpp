// The input-required rounds the switchboard holds for 2026-07-28 callers whose computer
// asks them something during a call (docs/protocol.md, "Input required"). A round waits for
// its caller's retry under an opaque `requestState` that names the round and carries a
// secret, of which the book keeps only a digest. A retry finds its round only with that
// secret, as the caller that was given it, of the same computer: anything else is as if no
// round existed. Bounded in count; a round lasts no longer than its call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "shared/verifier.hpp"
#include "supervisor/mcp/call_book.hpp"

namespace sb::supervisor {

struct BridgedCall;

class InputBook {
 public:
  // Well above the calls that can be in flight at once on a busy switchboard.
  static constexpr std::size_t kMaxRounds = 4096;

  // A new round of `owner`'s `call`: its requestState, or nothing when the book is full.
  std::optional<std::string> open(const CallOwner& owner, std::weak_ptr<BridgedCall> call);
  // The call whose round `state` names, when `owner` was given it and the call still
  // stands; the round is over either way.
  std::shared_ptr<BridgedCall> take(std::string_view state, const CallOwner& owner);
  // The round is over (its call ended, or a retry took it).
  void close(std::uint64_t round);
  // The round number a requestState of the book's names, or nothing when it is not one.
  static std::optional<std::uint64_t> round_of(std::string_view state);

  std::size_t size() const { return rounds_.size(); }

 private:
  struct Round {
    CallOwner owner;
    Verifier secret;
    std::weak_ptr<BridgedCall> call;
  };

  std::map<std::uint64_t, Round> rounds_;
  std::uint64_t next_round_ = 1;
};

}  // namespace sb::supervisor
