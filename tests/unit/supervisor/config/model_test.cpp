// The sets derived from a loaded Config (docs/configuration.md, "Derived settings").
#include "supervisor/config/config.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "shared/verifier.hpp"
#include "tests/unit/supervisor/config/config_test_support.hpp"

namespace sb::config::test {
namespace {

TEST(ConfigDerived, WildcardClientsInConfigOrder) {
  const Config config =
      parse(kMacmini +
            client("z", "@T1@", "computers = { \"*\" = [\"a\"] }\ndefault_computer = \"macmini\"") +
            client("m", "@T2@", "computers = { macmini = [\"*\"] }") +
            client("a", "@T3@", "computers = { \"*\" = [\"*\"] }\ndefault_computer = \"macmini\""));
  EXPECT_EQ(config.wildcard_clients(), (std::vector<std::string>{"z", "a"}));
}

TEST(ConfigDerived, UnusedComputers) {
  const std::string third = computer("rpi", "@C3@");
  // Named grants only: the computers no principal names.
  const Config named =
      parse(kTwoComputers + third + client("c", "@T1@", "computers = { muse-vm = [\"a\"] }"));
  EXPECT_EQ(named.unused_computers(), (std::vector<std::string>{"macmini", "rpi"}));
  // A pod counts as naming its computer.
  const Config with_attach =
      parse(kTwoComputers + third + client("c", "@T1@", "computers = { muse-vm = [\"a\"] }") +
            pty("p", kPodBody + "computer = \"rpi\""));
  EXPECT_EQ(with_attach.unused_computers(), (std::vector<std::string>{"macmini"}));
  // Any wildcard grant uses every computer.
  const Config wildcard = parse(kTwoComputers + third + kOwner);
  EXPECT_TRUE(wildcard.unused_computers().empty());
  // A v1 `tools` client names `default`.
  EXPECT_TRUE(parse(kV1 + client("c", "@T1@", "tools = [\"a\"]")).unused_computers().empty());
}

TEST(ConfigDerived, FindComputer) {
  const Config config = parse(kTwoComputers + kOwner);
  ASSERT_NE(config.find_computer("muse-vm"), nullptr);
  EXPECT_EQ(config.find_computer("muse-vm")->secret, sb::verifier_of("computer-2"));
  EXPECT_EQ(config.find_computer("nope"), nullptr);
}

}  // namespace
}  // namespace sb::config::test
