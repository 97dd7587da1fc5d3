// How the loader fails (docs/configuration.md, "Checking a file"): the first failure in
// the spec's order, and messages framed with the file they came from.
#include "supervisor/config/config.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/unit/supervisor/config/config_test_support.hpp"

namespace sb::config::test {
namespace {

TEST(ConfigErrors, FirstFailureInSpecOrderWins) {
  const std::string bad_listen = "listen = \"localhost:1\"\n";
  const std::string bad_bind = "listen = \"0.0.0.0:1\"\n";
  const std::string bad_max = "max_inflight = 0\n";
  const std::string bad_timeout = "[timeouts]\ndefault_secs = 0\n";
  const std::string bad_client = client("c", "@T1@", "");
  // Each pair: a file with several faults, and the one that must be reported.
  EXPECT_TRUE(Contains(error_of("nope = 1\n" + bad_listen + kV1 + kMuse), "unknown key"));
  EXPECT_TRUE(Contains(error_of(bad_listen + bad_max + bad_timeout + kV1 + kMuse), "`listen`"));
  EXPECT_TRUE(Contains(error_of(bad_bind + bad_max + bad_timeout), "not a loopback"));
  EXPECT_TRUE(Contains(error_of(bad_max + bad_timeout + kV1 + kMuse), "`max_inflight`"));
  EXPECT_TRUE(Contains(error_of(bad_timeout + kV1 + kMuse), "`default_secs`"));
  EXPECT_TRUE(Contains(error_of("[vm]\nsecret_sha256 = \"x\"\n" + kMuse), "[vm] and [[computer]]"));
  EXPECT_TRUE(Contains(error_of(computer("a.b", "@C1@") + bad_client), "may not contain"));
  EXPECT_TRUE(Contains(error_of(bad_client), "nothing to relay to"));
  EXPECT_TRUE(Contains(error_of(kMacmini + bad_client +
                                pty("p",
                                    "url = \"x\"\nsecret_file = "
                                    "\"x\"\ntools = [\"*\"]")),
                       "no `computers`"));
}

TEST(ConfigErrors, ParseConfigHasNoFilePrefix) {
  const std::string error = error_of(kMacmini + client("c", "@T1@", ""));
  EXPECT_EQ(error.rfind("[[client]] \"c\": no `computers`", 0), 0u) << error;
}

TEST(ConfigErrors, LoadFilePrefixesThePath) {
  TempDir dir;
  const fs::path path = dir.write("bad.toml", fill(kMacmini + client("c", "@T1@", "")));
  try {
    sb::config::load_config_file(path, kHome);
    FAIL() << "accepted";
  } catch (const ConfigError& error) {
    const std::string what = error.what();
    EXPECT_EQ(what.rfind("in " + path.string() + ": [[client]] \"c\": no `computers`", 0), 0u)
        << what;
  }
}

TEST(ConfigErrors, UnreadableFileSaysReading) {
  TempDir dir;
  const fs::path path = dir.path() / "absent.toml";
  try {
    sb::config::load_config_file(path, kHome);
    FAIL() << "accepted";
  } catch (const ConfigError& error) {
    const std::string what = error.what();
    EXPECT_EQ(what.rfind("reading " + path.string() + ": ", 0), 0u) << what;
    EXPECT_TRUE(Contains(what, "No such file or directory"));
  }
}

TEST(ConfigErrors, LoadFileReadsAGoodFile) {
  TempDir dir;
  const fs::path path = dir.write("good.toml", fill(kMacmini + kOwner));
  EXPECT_EQ(sb::config::load_config_file(path, kHome).computers.size(), 1u);
}

}  // namespace
}  // namespace sb::config::test
