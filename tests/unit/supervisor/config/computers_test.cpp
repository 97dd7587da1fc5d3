// [[computer]] blocks and the v1 [vm] form.
#include "supervisor/config/config.hpp"

#include <gtest/gtest.h>

#include <string>

#include "shared/verifier.hpp"
#include "tests/unit/supervisor/config/config_test_support.hpp"

namespace sb::config::test {
namespace {

TEST(ConfigComputers, V1ConfigMapsToDefaultExactly) {
  const Config config = parse("max_inflight = 6\n" + kV1 +
                              client("connect", "@T1@", "tools = [\"sys_info\", \"screenshot\"]") +
                              client("agent", "@T2@", "tools = [\"*\"]"));
  EXPECT_TRUE(config.v1_form);
  ASSERT_EQ(config.computers.size(), 1u);
  EXPECT_EQ(config.computers[0].name, "default");
  EXPECT_EQ(config.computers[0].secret, sb::verifier_of("computer-1"));
  EXPECT_EQ(config.computers[0].max_inflight, 6);

  ASSERT_EQ(config.clients.size(), 2u);
  sb::config::Grant connect;
  connect.named["default"].names = {"sys_info", "screenshot"};
  EXPECT_EQ(config.clients[0].grant, connect);
  EXPECT_EQ(config.clients[0].default_computer, "default");
  sb::config::Grant agent;
  agent.named["default"].all = true;  // a named grant, not a wildcard one
  EXPECT_EQ(config.clients[1].grant, agent);
  EXPECT_EQ(config.clients[1].default_computer, "default");
  EXPECT_TRUE(config.wildcard_clients().empty());
}

TEST(ConfigComputers, V1ClientMayUseTheV2FormAndSetDefaultAndCap) {
  const Config config = parse(
      kV1 + client("a", "@T1@", "computers = { default = [\"x\"] }") +
      client("b", "@T2@", "tools = [\"y\"]\ndefault_computer = \"default\"\nmax_inflight = 2"));
  EXPECT_TRUE(config.clients[0].grant.tools_for("default")->allows("x"));
  EXPECT_EQ(config.clients[1].default_computer, "default");
  EXPECT_EQ(config.clients[1].max_inflight, 2);
}

TEST(ConfigComputers, V1PtyAttachTargetsDefault) {
  const Config config = parse(kV1 + pty("p", kPodBody));
  EXPECT_EQ(config.pods[0].computer, "default");
}

TEST(ConfigComputers, VmTogetherWithComputerIsRefused) {
  const std::string error = error_of(kV1 + kMuse + kOwner);
  EXPECT_TRUE(Contains(error, "[vm] and [[computer]]"));
  EXPECT_TRUE(Contains(error, "\"default\""));
  EXPECT_TRUE(Contains(error, "[[computer]] block"));
}

TEST(ConfigComputers, VmVerifierErrorHasItsContext) {
  EXPECT_TRUE(Contains(error_of("[vm]\nsecret_sha256 = \"abc\"\n" + kOwner),
                       "[vm].secret_sha256: a verifier must start with `sha256:`"));
}

TEST(ConfigComputers, KeepConfigOrder) {
  const Config config = parse(kMuse + kMacmini + kOwner);
  ASSERT_EQ(config.computers.size(), 2u);
  EXPECT_EQ(config.computers[0].name, "muse-vm");
  EXPECT_EQ(config.computers[1].name, "macmini");
  EXPECT_FALSE(config.v1_form);
}

TEST(ConfigComputers, DotInNameIsRefusedWithASuggestion) {
  const std::string error = error_of(computer("rpi1.local", "@C1@") + kOwner);
  EXPECT_TRUE(Contains(error, "[[computer]] \"rpi1.local\": "));
  EXPECT_TRUE(Contains(error, "may not contain `.`"));
  EXPECT_TRUE(Contains(error, "dotted key"));
  EXPECT_TRUE(Contains(error, "rpi1-local"));
  EXPECT_TRUE(Contains(error_of(computer("a.b.c", "@C1@") + kOwner), "\"a-b-c\""));
}

TEST(ConfigComputers, NameRule) {
  for (const std::string& bad : {std::string(), std::string("a b"), std::string("a/b"),
                                 std::string(65, 'a'), std::string("caf\xc3\xa9")}) {
    EXPECT_TRUE(Contains(error_of(computer(bad, "@C1@") + kOwner),
                         "computer name must be 1-64 chars of [A-Za-z0-9_-]"))
        << bad;
  }
  const std::string longest(64, 'z');
  EXPECT_EQ(parse(computer(longest, "@C1@") +
                  client("c", "@T1@", "computers = { " + longest + " = [\"a\"] }"))
                .computers[0]
                .name,
            longest);
  EXPECT_NO_THROW(
      parse(computer("A_b-9", "@C1@") + client("c", "@T1@", "computers = { A_b-9 = [\"a\"] }")));
}

TEST(ConfigComputers, OwnerIsAnEscapedQuotedName) {
  const std::string error = error_of(computer("a\\\"b", "@C1@") + kOwner);
  EXPECT_TRUE(Contains(error, "[[computer]] \"a\\\"b\": a computer name"));
}

TEST(ConfigComputers, DuplicateNameIsRefused) {
  EXPECT_TRUE(Contains(error_of(kMacmini + computer("macmini", "@C2@") + kOwner),
                       "[[computer]] \"macmini\": duplicate name"));
}

TEST(ConfigComputers, VerifierParseErrorNamesTheOwner) {
  const std::string error = error_of(computer("macmini", "sha256:zz") + kOwner);
  EXPECT_TRUE(Contains(error, "[[computer]] \"macmini\": `secret_sha256`: "));
  EXPECT_TRUE(Contains(error, "not hex"));
}

TEST(ConfigComputers, DuplicateVerifierBetweenComputersIsRefused) {
  const std::string error = error_of(kMacmini + computer("muse-vm", "@C1@") + kOwner);
  EXPECT_TRUE(Contains(error, "[[computer]] \"muse-vm\": "));
  EXPECT_TRUE(Contains(error, "already another computer's"));
  EXPECT_TRUE(Contains(error, "\"macmini\""));
}

TEST(ConfigComputers, NoComputerIsNothingToRelayTo) {
  const std::string error = error_of(kOwner);
  EXPECT_TRUE(Contains(error, "nothing to relay to"));
  EXPECT_TRUE(Contains(error, "[[computer]]"));
  EXPECT_TRUE(Contains(error, "[vm]"));
}

}  // namespace
}  // namespace sb::config::test
