// One descriptor's place in the service manager's store (StoreEntry), and the names a
// computer's descriptors have there.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "shared/service_notify.hpp"
#include "shared/verifier.hpp"
#include "supervisor/switching/descriptors.hpp"

namespace sb::supervisor {

// A descriptor's entry in the service manager's store (docs/architecture.md,
// "Switching"), taken out of the store when this goes, unless kept for the next process.
class StoreEntry {
 public:
  StoreEntry() = default;
  StoreEntry(const ServiceNotifier* store, std::string name)
      : store_(store), name_(std::move(name)) {}
  StoreEntry(StoreEntry&& other) noexcept
      : store_(std::exchange(other.store_, nullptr)), name_(std::move(other.name_)) {}
  StoreEntry& operator=(StoreEntry&& other) noexcept {
    if (this != &other) {
      forget();
      store_ = std::exchange(other.store_, nullptr);
      name_ = std::move(other.name_);
    }
    return *this;
  }
  ~StoreEntry() { forget(); }

  // The entry stays in the store: the next process takes it up.
  void keep() { store_ = nullptr; }

 private:
  void forget() {
    if (store_ && !name_.empty()) store_->forget(name_);
    store_ = nullptr;
  }
  const ServiceNotifier* store_ = nullptr;
  std::string name_;
};

// The names a computer's socket and its worker's record file have among the descriptors
// that cross a switch or wait in the service manager's store (docs/architecture.md,
// "Switching"): the same for the same computer name in every process, kSocketPrefix or
// kRecordPrefix, then 12 hex digits of the name's SHA-256 (and the session's generation).
inline std::string computer_key(const std::string& computer) {
  return render_verifier(verifier_of(computer)).substr(7, 12);
}
inline std::string stored_socket_name(const std::string& computer, std::uint64_t generation) {
  return std::string(kSocketPrefix) + computer_key(computer) + "-" + std::to_string(generation);
}
inline std::string record_file_name(const std::string& computer) {
  return std::string(kRecordPrefix) + computer_key(computer);
}

}  // namespace sb::supervisor
