// Reads the switchboard's audit file (JSON lines) and waits, bounded, for an event.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace harness {

using AuditPredicate = std::function<bool(const nlohmann::json&)>;

class AuditLog {
 public:
  explicit AuditLog(std::filesystem::path path) : path_(std::move(path)) {}

  const std::filesystem::path& path() const { return path_; }
  // Every complete line so far, parsed (a line that is not JSON becomes a string value).
  std::vector<nlohmann::json> lines() const;
  // The lines whose "event" is `event` and that satisfy `extra` (if given).
  std::vector<nlohmann::json> events(std::string_view event, AuditPredicate extra = {}) const;
  std::size_t count(std::string_view event, AuditPredicate extra = {}) const {
    return events(event, std::move(extra)).size();
  }
  // Waits until a line with `event` satisfying `extra` exists; returns the first one.
  std::optional<nlohmann::json> wait_for(
      std::string_view event, AuditPredicate extra = {},
      std::chrono::milliseconds timeout = std::chrono::seconds(10)) const;
  // Waits until at least `n` such lines exist.
  bool wait_for_count(std::string_view event, std::size_t n, AuditPredicate extra = {},
                      std::chrono::milliseconds timeout = std::chrono::seconds(10)) const;
  std::string text() const;

 private:
  std::filesystem::path path_;
};

// Predicate helper: every key of `fields` is present in the line with an equal value.
AuditPredicate fields_equal(nlohmann::json fields);

}  // namespace harness
