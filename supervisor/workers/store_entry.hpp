// StoreEntry: one descriptor's place in the service manager's store.
#pragma once

#include <string>
#include <utility>

#include "shared/service_notify.hpp"

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

}  // namespace sb::supervisor
