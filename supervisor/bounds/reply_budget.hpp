// The bytes of replies the supervisor holds for callers that have not read them yet, held
// to `[limits] max_reply_buffer_mib` (docs/robustness.md, "Memory"): however slowly callers
// read, replies waiting for them never take more than this. A reply is admitted with a
// lease, given back when the last of its bytes has been written or the caller is gone.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "shared/log.hpp"

namespace sb::supervisor {

class ReplyBudget {
  struct Account {
    std::uint64_t capacity = 0;
    std::uint64_t held = 0;
  };

 public:
  // Bytes of the budget, given back when destroyed. Empty (0 bytes) by default, so a reply
  // that needs no budget (a small local answer) carries one too.
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& other) noexcept { *this = std::move(other); }
    Lease& operator=(Lease&& other) noexcept;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease() { give_back(); }

    std::uint64_t bytes() const { return bytes_; }
    // Keeps `other` alive until the lease is given back: what else the reply holds.
    void keep(std::shared_ptr<void> other) { kept_ = std::move(other); }

   private:
    friend class ReplyBudget;
    Lease(std::shared_ptr<Account> account, std::uint64_t bytes)
        : account_(std::move(account)), bytes_(bytes) {}
    void give_back();

    // Shared so that a lease outliving the supervisor's state (a connection closing during
    // shutdown) never touches freed memory.
    std::shared_ptr<Account> account_;
    std::uint64_t bytes_ = 0;
    std::shared_ptr<void> kept_;
  };

  explicit ReplyBudget(std::uint64_t capacity);

  // A lease for `bytes`, or nothing when it would take the total past the capacity (said
  // in the log at most once a minute).
  std::optional<Lease> reserve(std::uint64_t bytes);
  // A reload: leases already given keep their bytes; new ones see the new capacity.
  void set_capacity(std::uint64_t capacity) { account_->capacity = capacity; }
  std::uint64_t held() const { return account_->held; }
  std::uint64_t capacity() const { return account_->capacity; }

 private:
  std::shared_ptr<Account> account_;
  LogThrottle refusals_;
};

}  // namespace sb::supervisor
