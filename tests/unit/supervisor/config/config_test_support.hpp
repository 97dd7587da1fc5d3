// What the configuration tests share: config text with verifier markers filled in, parsing
// it or getting its error, the usual blocks, and a scratch directory.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>

#include "shared/verifier.hpp"
#include "supervisor/config/config.hpp"

namespace sb::config::test {

namespace fs = std::filesystem;

inline constexpr std::string_view kHome = "/home/u";

inline std::string verifier(std::string_view seed) {
  return sb::render_verifier(sb::verifier_of(seed));
}

// Test files write @C1@.. for computer secrets and @T1@.. for client tokens; each marker
// becomes a distinct real verifier.
inline std::string fill(std::string text) {
  static const std::map<std::string, std::string> kMarkers{
      {"@C1@", verifier("computer-1")}, {"@C2@", verifier("computer-2")},
      {"@C3@", verifier("computer-3")}, {"@T1@", verifier("client-1")},
      {"@T2@", verifier("client-2")},   {"@T3@", verifier("client-3")},
  };
  for (const auto& [marker, value] : kMarkers) {
    for (auto at = text.find(marker); at != std::string::npos; at = text.find(marker)) {
      text.replace(at, marker.size(), value);
    }
  }
  return text;
}

inline Config parse(std::string_view text, std::string_view home = kHome) {
  return sb::config::parse_config(fill(std::string(text)), home);
}

inline std::string error_of(std::string_view text, std::string_view home = kHome) {
  try {
    parse(text, home);
  } catch (const ConfigError& error) {
    return error.what();
  }
  ADD_FAILURE() << "the config was accepted:\n" << fill(std::string(text));
  return {};
}

inline testing::AssertionResult Contains(const std::string& haystack, std::string_view needle) {
  if (haystack.find(needle) != std::string::npos) return testing::AssertionSuccess();
  return testing::AssertionFailure()
         << "\"" << haystack << "\"\n  does not contain \"" << needle << "\"";
}

inline std::string computer(std::string_view name, std::string_view secret,
                            std::string_view extra = "") {
  return "\n[[computer]]\nname = \"" + std::string(name) + "\"\nsecret_sha256 = \"" +
         std::string(secret) + "\"\n" + std::string(extra) + "\n";
}

inline std::string client(std::string_view name, std::string_view token, std::string_view body) {
  return "\n[[client]]\nname = \"" + std::string(name) + "\"\ntoken_sha256 = \"" +
         std::string(token) + "\"\n" + std::string(body) + "\n";
}

inline std::string pty(std::string_view name, std::string_view body) {
  return "\n[[pty_attach]]\nname = \"" + std::string(name) + "\"\n" + std::string(body) + "\n";
}

inline const std::string kMacmini = computer("macmini", "@C1@");
inline const std::string kMuse = computer("muse-vm", "@C2@");
inline const std::string kTwoComputers = kMacmini + kMuse;
inline const std::string kOwner =
    client("owner", "@T1@", "default_computer = \"macmini\"\ncomputers = { \"*\" = [\"*\"] }");
inline const std::string kV1 = "[vm]\nsecret_sha256 = \"@C1@\"\n";
inline const std::string kPodBody =
    "url = \"wss://pod.example.ts.net/tools/attach/s1\"\nsecret_file = \"/nonexistent\"\n"
    "tools = [\"*\"]\n";

// A fresh directory under /tmp for files, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/sb-config-test-XXXXXX";
    const char* made = ::mkdtemp(pattern);
    if (!made) throw std::runtime_error("mkdtemp failed");
    path_ = made;
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  fs::path write(std::string_view name, std::string_view content) const {
    const fs::path path = path_ / name;
    std::ofstream(path, std::ios::binary) << content;
    return path;
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

}  // namespace sb::config::test
