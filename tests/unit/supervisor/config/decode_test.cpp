// The TOML layer of the loader: strict keys, types, required keys.
#include "supervisor/config/config.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/unit/supervisor/config/config_test_support.hpp"

namespace sb::config::test {
namespace {

TEST(ConfigToml, SyntaxErrorSaysWhere) {
  EXPECT_TRUE(Contains(error_of("listen = [\n"), "TOML parse error at line"));
}

TEST(ConfigToml, UnknownTopLevelKeyIsRefused) {
  const std::string error = error_of("listne = \"127.0.0.1:8790\"\n" + kMacmini + kOwner);
  EXPECT_TRUE(Contains(error, "unknown key `listne`"));
  EXPECT_TRUE(Contains(error, "listen"));  // lists what is allowed
}

TEST(ConfigToml, UnknownKeyInEveryBlockIsRefused) {
  struct Case {
    std::string text;
    std::string owner;
  };
  const std::vector<Case> cases{
      {"[vm]\nsecret_sha256 = \"@C1@\"\nname = \"x\"\n" + kOwner, "[vm]"},
      {computer("macmini", "@C1@", "maxinflight = 3") + kOwner, "[[computer]] \"macmini\""},
      {"[timeouts]\ndefault = 5\n" + kMacmini + kOwner, "[timeouts]"},
      {kMacmini + kOwner + client("c", "@T2@", "computers = { macmini = [\"a\"] }\ntool = []"),
       "[[client]] \"c\""},
      {kMacmini + kOwner + pty("p", kPodBody + "secret = \"x\""), "[[pty_attach]] \"p\""},
  };
  for (const Case& c : cases) {
    const std::string error = error_of(c.text);
    EXPECT_TRUE(Contains(error, c.owner + ": unknown key `"));
  }
}

TEST(ConfigToml, ComputersTableAndToolTimeoutsAreFreeForm) {
  const Config config =
      parse("[timeouts.tools]\nany_tool_name = 5\n\"odd name\" = 6\n" + kMacmini +
            client("c", "@T1@", "computers = { macmini = [\"anything\", \"at all\"] }"));
  EXPECT_EQ(config.timeouts.for_tool("any_tool_name"), 5);
  EXPECT_EQ(config.timeouts.for_tool("odd name"), 6);
  EXPECT_TRUE(config.clients[0].grant.tools_for("macmini")->allows("at all"));
}

TEST(ConfigToml, TypeErrorsNameTheKey) {
  EXPECT_TRUE(
      Contains(error_of("listen = 8790\n" + kMacmini + kOwner), "`listen` must be a string"));
  EXPECT_TRUE(Contains(error_of("max_inflight = \"8\"\n" + kMacmini + kOwner),
                       "`max_inflight` must be an integer"));
  EXPECT_TRUE(Contains(error_of("allow_insecure_bind = 1\n" + kMacmini + kOwner),
                       "`allow_insecure_bind` must be true or false"));
  EXPECT_TRUE(Contains(error_of(kMacmini + client("c", "@T1@", "computers = { macmini = \"a\" }")),
                       "[[client]] \"c\": `computers.macmini` must be an array of strings"));
  EXPECT_TRUE(Contains(error_of(kMacmini + client("c", "@T1@", "computers = { macmini = [1] }")),
                       "`computers.macmini` must be an array of strings"));
  EXPECT_TRUE(Contains(error_of("[timeouts.tools]\nbash = \"60\"\n" + kMacmini + kOwner),
                       "[timeouts.tools]: `bash` must be a number of seconds"));
  EXPECT_TRUE(Contains(error_of("[computer]\nname = \"a\"\n" + kOwner),
                       "`computer` must be an array of tables"));
}

TEST(ConfigToml, MissingRequiredKeyIsNamed) {
  EXPECT_TRUE(Contains(error_of(kMacmini + "\n[[client]]\ntoken_sha256 = \"@T1@\"\n"),
                       "[[client]] #1: missing required key `name`"));
  EXPECT_TRUE(Contains(error_of("[[computer]]\nsecret_sha256 = \"@C1@\"\n" + kOwner),
                       "[[computer]] #1: missing required key `name`"));
  EXPECT_TRUE(Contains(error_of(kMacmini + kOwner + pty("p", "url = \"wss://h/\"\ntools = []")),
                       "missing required key `secret_file`"));
}

TEST(ConfigToml, BareDottedComputerKeyIsExplained) {
  const std::string error =
      error_of(kMacmini + client("c", "@T1@", "computers = { rpi1.local = [\"a\"] }"));
  EXPECT_TRUE(Contains(error, "`computers.rpi1`"));
  EXPECT_TRUE(Contains(error, "dotted key"));
  EXPECT_TRUE(Contains(error, "rpi1.local"));
  EXPECT_TRUE(Contains(error, "rpi1-local"));
}

}  // namespace
}  // namespace sb::config::test
