#include "supervisor/bounds/reply_budget.hpp"

#include <string>

namespace sb::supervisor {

ReplyBudget::Lease& ReplyBudget::Lease::operator=(Lease&& other) noexcept {
  if (this == &other) return *this;
  give_back();
  account_ = std::move(other.account_);
  bytes_ = other.bytes_;
  other.bytes_ = 0;
  kept_ = std::move(other.kept_);
  return *this;
}

void ReplyBudget::Lease::give_back() {
  if (account_) account_->held -= bytes_;
  account_.reset();
  bytes_ = 0;
  kept_.reset();
}

ReplyBudget::ReplyBudget(std::uint64_t capacity)
    : account_(std::make_shared<Account>(Account{capacity, 0})) {}

std::optional<ReplyBudget::Lease> ReplyBudget::reserve(std::uint64_t bytes) {
  if (bytes > account_->capacity || account_->held > account_->capacity - bytes) {
    if (const auto count = refusals_.due()) {
      log_warn("reply dropped: replies waiting for callers fill [limits] max_reply_buffer_mib",
               {{"held_bytes", std::to_string(account_->held)},
                {"reply_bytes", std::to_string(bytes)},
                {"times", std::to_string(*count)}});
    }
    return std::nullopt;
  }
  account_->held += bytes;
  return Lease(account_, bytes);
}

}  // namespace sb::supervisor
