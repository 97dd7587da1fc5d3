// (2) The command line, the switchboard's URL and the secret.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>

#include "shared/dial_target.hpp"

namespace demo {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Options {
  std::string url;
  sb::DialTarget endpoint;
  std::optional<std::string> secret_file;  // else the secret comes from SB_SECRET
  bool stdio = false;                      // serve on stdin/stdout instead of dialling
  bool help = false;
  bool version = false;
};

Options parse_options(int argc, char** argv);

// Read before every dial, so replacing the file takes effect at the next attempt.
std::string read_secret(const Options& options);

}  // namespace demo
