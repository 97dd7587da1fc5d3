// A datagram socket standing in for systemd's notify socket: a program started with
// NOTIFY_SOCKET naming it says its state here (READY=1, RELOADING=1, STOPPING=1), one
// message per datagram.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

#include "base/unique_fd.hpp"

namespace harness {

class NotifySocket {
 public:
  // Binds `path`; throws when it cannot.
  explicit NotifySocket(std::filesystem::path path);

  const std::filesystem::path& path() const { return path_; }
  // The next message, or nothing when none arrives within `within`.
  std::optional<std::string> next(std::chrono::milliseconds within) const;

 private:
  std::filesystem::path path_;
  sb::base::UniqueFd socket_;
};

}  // namespace harness
