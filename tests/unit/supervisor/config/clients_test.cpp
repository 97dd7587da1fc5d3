// [[client]] blocks, and the tool lists and grants they hold (docs/configuration.md,
// "Grants").
#include "supervisor/config/config.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <string_view>

#include "tests/unit/supervisor/config/config_test_support.hpp"

namespace sb::config::test {
namespace {

// ---------------------------------------------------------------------------------------
// Clients

TEST(ConfigClients, NameRuleAllowsDots) {
  for (const std::string& bad :
       {std::string(), std::string("a b"), std::string(65, 'x'), std::string("a/b")}) {
    EXPECT_TRUE(
        Contains(error_of(kMacmini + client(bad, "@T1@", "computers = { macmini = [\"a\"] }")),
                 "name must be 1-64 chars of [A-Za-z0-9._-]"))
        << bad;
  }
  EXPECT_EQ(parse(kMacmini + client("c.d-e_f", "@T1@", "computers = { macmini = [\"a\"] }"))
                .clients[0]
                .name,
            "c.d-e_f");
}

TEST(ConfigClients, ComputerAndClientMayShareAName) {
  EXPECT_NO_THROW(parse(kMacmini + client("macmini", "@T1@", "computers = { macmini = [\"a\"] }")));
}

TEST(ConfigClients, DuplicateNameIsRefused) {
  const std::string body = "computers = { macmini = [\"a\"] }";
  EXPECT_TRUE(Contains(error_of(kMacmini + client("c", "@T1@", body) + client("c", "@T2@", body)),
                       "[[client]] \"c\": duplicate name"));
}

TEST(ConfigClients, TokenVerifierParseErrorNamesTheOwner) {
  const std::string error =
      error_of(kMacmini + client("c", "sha256:abc", "computers = { macmini = [\"a\"] }"));
  EXPECT_TRUE(Contains(error, "[[client]] \"c\": `token_sha256`: "));
  EXPECT_TRUE(Contains(error, "not hex"));
}

TEST(ConfigClients, TokenEqualToAComputerSecretIsRefused) {
  const std::string error =
      error_of(kTwoComputers + client("c", "@C2@", "computers = { macmini = [\"a\"] }"));
  EXPECT_TRUE(Contains(error, "[[client]] \"c\": "));
  EXPECT_TRUE(Contains(error, "must differ"));
  EXPECT_TRUE(Contains(error, "\"muse-vm\""));
}

TEST(ConfigClients, TokenSharedBetweenClientsIsRefused) {
  const std::string body = "computers = { macmini = [\"a\"] }";
  const std::string error =
      error_of(kMacmini + client("a", "@T1@", body) + client("b", "@T1@", body));
  EXPECT_TRUE(Contains(error, "[[client]] \"b\": "));
  EXPECT_TRUE(Contains(error, "shared with another client"));
}

TEST(ConfigClients, ToolsAndComputersTogetherAreRefused) {
  const std::string error =
      error_of(kV1 + client("c", "@T1@", "tools = [\"a\"]\ncomputers = { default = [\"a\"] }"));
  EXPECT_TRUE(Contains(error, "both set"));
  EXPECT_TRUE(Contains(error, "keep `computers` only"));
}

TEST(ConfigClients, V1ToolsBesideComputerBlocksAreRefused) {
  const std::string error = error_of(kMacmini + client("c", "@T1@", "tools = [\"sys_info\"]"));
  EXPECT_TRUE(Contains(error, "[[client]] \"c\": "));
  EXPECT_TRUE(Contains(error, "v1 form"));
  EXPECT_TRUE(Contains(error, "computers = { <name> = [...] }"));
  EXPECT_TRUE(Contains(error, "computers = { macmini = [\"sys_info\"] }"));
}

TEST(ConfigClients, NeitherToolsNorComputersIsRefused) {
  const std::string error = error_of(kMacmini + client("c", "@T1@", ""));
  EXPECT_TRUE(Contains(error, "no `computers`"));
  EXPECT_TRUE(Contains(error, "{ \"*\" = [\"*\"] }"));
}

TEST(ConfigClients, EmptyComputersTableIsRefused) {
  EXPECT_TRUE(Contains(error_of(kMacmini + client("c", "@T1@", "computers = {}")),
                       "[[client]] \"c\": `computers` is empty"));
}

TEST(ConfigClients, WildcardMixedWithNamedComputersIsRefused) {
  const std::string error = error_of(
      kMacmini + client("c", "@T1@", "computers = { \"*\" = [\"*\"], macmini = [\"a\"] }"));
  EXPECT_TRUE(Contains(error, "mixes \"*\" with computer names"));
}

TEST(ConfigClients, NamedComputerKeysFollowTheComputerNameRule) {
  const std::string error =
      error_of(kMacmini + client("c", "@T1@", "computers = { \"rpi1.local\" = [\"a\"] }"));
  EXPECT_TRUE(Contains(error, "[[client]] \"c\" `computers.rpi1.local`: "));
  EXPECT_TRUE(Contains(error, "may not contain `.`"));
  EXPECT_TRUE(Contains(error, "rpi1-local"));
}

TEST(ConfigClients, UnconfiguredComputerInGrantIsRefused) {
  const std::string error =
      error_of(kMacmini + client("c", "@T1@",
                                 "computers = { macmini = [\"a\"], macmni = [\"a\"] }\n"
                                 "default_computer = \"macmini\""));
  EXPECT_TRUE(Contains(error, "[[client]] \"c\": "));
  EXPECT_TRUE(Contains(error, "\"macmni\""));
  EXPECT_TRUE(Contains(error, "not a configured [[computer]]"));
  EXPECT_TRUE(Contains(error, "later"));
}

TEST(ConfigClients, UnconfiguredDefaultComputerIsRefused) {
  const std::string error =
      error_of(kMacmini + client("c", "@T1@",
                                 "computers = { \"*\" = [\"*\"] }\ndefault_computer = \"ghost\""));
  EXPECT_TRUE(Contains(error, "\"ghost\""));
  EXPECT_TRUE(Contains(error, "not a configured computer"));
}

TEST(ConfigClients, UnreachableDefaultComputerIsRefused) {
  const std::string error = error_of(
      kTwoComputers + kOwner +
      client("c", "@T2@", "computers = { macmini = [\"a\"] }\ndefault_computer = \"muse-vm\""));
  EXPECT_TRUE(Contains(error, "[[client]] \"c\": "));
  EXPECT_TRUE(Contains(error, "not in this caller's `computers`"));
  EXPECT_TRUE(Contains(error, "POST /mcp"));
}

TEST(ConfigClients, DefaultComputerIsCheckedForExistenceFirst) {
  const std::string error =
      error_of(kMacmini +
               client("c", "@T1@", "computers = { macmini = [\"a\"] }\ndefault_computer = \"x\""));
  EXPECT_TRUE(Contains(error, "not a configured computer"));
}

TEST(ConfigClients, WildcardCallerNeedsDefaultComputerEvenWithOneComputer) {
  const std::string error =
      error_of(kMacmini + client("c", "@T1@", "computers = { \"*\" = [\"*\"] }"));
  EXPECT_TRUE(Contains(error, "[[client]] \"c\": `default_computer` is required"));
  EXPECT_TRUE(Contains(error, "\"*\""));
}

TEST(ConfigClients, MultiComputerCallerNeedsDefaultComputer) {
  const std::string error = error_of(
      kTwoComputers + client("c", "@T1@", "computers = { macmini = [\"a\"], muse-vm = [\"b\"] }"));
  EXPECT_TRUE(Contains(error, "`default_computer` is required"));
  EXPECT_TRUE(Contains(error, "2 computers"));
}

TEST(ConfigClients, SingleComputerGrantIsTheDefault) {
  const Config config =
      parse(kTwoComputers + client("c", "@T2@", "computers = { muse-vm = [\"a\"] }") + kOwner);
  EXPECT_EQ(config.clients[0].default_computer, "muse-vm");
  EXPECT_EQ(config.clients[1].default_computer, "macmini");
}

// ---------------------------------------------------------------------------------------
// Tool lists and grants (docs/configuration.md, "Grants")

sb::config::NameList tools_of(std::string_view list) {
  const Config config =
      parse(kMacmini + client("c", "@T1@", "computers = { macmini = " + std::string(list) + " }"));
  return *config.clients[0].grant.tools_for("macmini");
}

TEST(ConfigTools, EmptyListIsRefused) {
  EXPECT_TRUE(Contains(error_of(kMacmini + client("c", "@T1@", "computers = { macmini = [] }")),
                       "[[client]] \"c\" `computers.macmini`: `tools` is empty"));
  EXPECT_TRUE(Contains(error_of(kV1 + client("c", "@T1@", "tools = []")),
                       "[[client]] \"c\": `tools` is empty"));
  EXPECT_TRUE(Contains(
      error_of(kMacmini +
               client("c", "@T1@", "computers = { \"*\" = [] }\ndefault_computer = \"macmini\"")),
      "[[client]] \"c\" `computers.\"*\"`: `tools` is empty"));
}

TEST(ConfigTools, WildcardMixedWithNamesIsRefused) {
  EXPECT_TRUE(
      Contains(error_of(kMacmini + client("c", "@T1@", "computers = { macmini = [\"*\", \"a\"] }")),
               "mixes \"*\" with names"));
  EXPECT_TRUE(Contains(error_of(kV1 + client("c", "@T1@", "tools = [\"a\", \"*\"]")),
                       "mixes \"*\" with names"));
}

TEST(ConfigTools, StarAloneIsEveryTool) {
  const auto tools = tools_of("[\"*\"]");
  EXPECT_TRUE(tools.all);
  EXPECT_TRUE(tools.allows("anything"));
}

TEST(ConfigTools, NamesAreTrimmedAndDuplicatesCollapse) {
  const auto tools = tools_of("[\" sys_info \", \"sys_info\", \"screenshot\\t\", \"\"]");
  EXPECT_FALSE(tools.all);
  EXPECT_EQ(tools.names, (std::set<std::string, std::less<>>{"", "screenshot", "sys_info"}));
  EXPECT_TRUE(tools.allows("sys_info"));
  EXPECT_FALSE(tools.allows("mouse"));
}

TEST(ConfigGrant, ToolsForWildcardAndNamed) {
  const Config config =
      parse(kTwoComputers + kOwner + client("c", "@T2@", "computers = { macmini = [\"a\"] }"));
  const auto& wildcard = config.clients[0].grant;
  EXPECT_TRUE(wildcard.wildcard);
  ASSERT_NE(wildcard.tools_for("muse-vm"), nullptr);
  EXPECT_TRUE(wildcard.tools_for("added-later")->all);
  const auto& named = config.clients[1].grant;
  EXPECT_FALSE(named.wildcard);
  ASSERT_NE(named.tools_for("macmini"), nullptr);
  EXPECT_TRUE(named.tools_for("macmini")->allows("a"));
  EXPECT_EQ(named.tools_for("muse-vm"), nullptr);
}

// ---------------------------------------------------------------------------------------
// Resources and prompts

TEST(ConfigGrants, ResourcesAndPromptsAreNoneUnlessGranted) {
  const Grant grant =
      parse(kMacmini + client("c", "@T1@", "computers = { macmini = [\"*\"] }")).clients[0].grant;
  EXPECT_EQ(grant.resources_for("macmini"), nullptr);
  EXPECT_EQ(grant.prompts_for("macmini"), nullptr);
}

TEST(ConfigGrants, ResourcesAndPromptsPerComputer) {
  const Grant grant =
      parse(kTwoComputers +
            client("c", "@T1@",
                   "computers = { macmini = [\"a\"], muse-vm = [\"b\"] }\n"
                   "default_computer = \"macmini\"\n"
                   "resources = { macmini = [\"file:///srv/*.md\", \"test://static\"] }\n"
                   "prompts = { muse-vm = [\"*\"] }"))
          .clients[0]
          .grant;
  const UriPatterns* resources = grant.resources_for("macmini");
  ASSERT_NE(resources, nullptr);
  EXPECT_TRUE(resources->allows("file:///srv/a/b.md"));
  EXPECT_TRUE(resources->allows("test://static"));
  EXPECT_FALSE(resources->allows("test://static/x"));
  EXPECT_FALSE(resources->allows("file:///etc/passwd"));
  // A template only when every URI it can name is granted.
  EXPECT_TRUE(resources->allows_template("file:///srv/{dir}/{name}.md"));
  EXPECT_TRUE(resources->allows_template("test://static"));
  EXPECT_FALSE(resources->allows_template("file:///srv/{name}"));
  EXPECT_FALSE(resources->allows_template("file:///srv/{name}.md{?raw}"));
  EXPECT_FALSE(resources->allows_template("file:///srv/{name.md"));
  EXPECT_FALSE(resources->allows_template("file:///srv/name}.md"));
  EXPECT_TRUE(UriPatterns{.all = true}.allows_template("any{thing"));
  EXPECT_EQ(grant.resources_for("muse-vm"), nullptr);
  EXPECT_EQ(grant.prompts_for("macmini"), nullptr);
  ASSERT_NE(grant.prompts_for("muse-vm"), nullptr);
  EXPECT_TRUE(grant.prompts_for("muse-vm")->all);
}

TEST(ConfigGrants, AStarKeyCoversOnlyTheComputersTheCallerReaches) {
  const Grant grant = parse(kTwoComputers + client("c", "@T1@",
                                                   "computers = { macmini = [\"a\"] }\n"
                                                   "prompts = { \"*\" = [\"greet\"] }"))
                          .clients[0]
                          .grant;
  ASSERT_NE(grant.prompts_for("macmini"), nullptr);
  EXPECT_TRUE(grant.prompts_for("macmini")->allows("greet"));
  EXPECT_FALSE(grant.prompts_for("macmini")->allows("other"));
  EXPECT_EQ(grant.prompts_for("muse-vm"), nullptr);
}

TEST(ConfigGrants, ResourcesAndPromptsAreCheckedAsStrictlyAsComputers) {
  const auto error_with = [](const std::string& lines) {
    return error_of(kTwoComputers +
                    client("c", "@T1@", "computers = { macmini = [\"a\"] }\n" + lines));
  };
  EXPECT_TRUE(Contains(error_with("resources = { muse-vm = [\"*\"] }"),
                       "\"muse-vm\" is not a computer this caller's `computers` reaches"));
  EXPECT_TRUE(Contains(error_with("prompts = { nowhere = [\"*\"] }"),
                       "\"nowhere\" is not a computer this caller's `computers` reaches"));
  EXPECT_TRUE(Contains(error_with("resources = {}"), "`resources` is empty"));
  EXPECT_TRUE(Contains(error_with("prompts = { macmini = [] }"), "`prompts` is empty"));
  EXPECT_TRUE(Contains(error_with("prompts = { macmini = [\"*\", \"greet\"] }"),
                       "`prompts` mixes \"*\" with names"));
  EXPECT_TRUE(Contains(error_with("resources = { macmini = [\"*\", \"a://b\"] }"),
                       "`resources` mixes \"*\" with URI patterns"));
  EXPECT_TRUE(Contains(error_with("resources = { \"*\" = [\"*\"], macmini = [\"*\"] }"),
                       "`resources` mixes \"*\" with computer names"));
  EXPECT_TRUE(Contains(error_with("resources = { macmini = [\"a b\"] }"),
                       "URI pattern \"a b\" is empty or holds a space"));
  EXPECT_TRUE(Contains(error_with("resources = { macmini = [\"\"] }"), "is empty or holds"));
  EXPECT_TRUE(Contains(error_with("resources = { macmini = \"a://b\" }"), "`resources.macmini`"));
  EXPECT_TRUE(Contains(error_with("prompts = [\"greet\"]"), "`prompts`"));
}

TEST(ConfigGrants, ResourcesAndPromptsNeedTheV2Form) {
  const std::string v1 = "[vm]\nsecret_sha256 = \"@C1@\"\n" +
                         client("c", "@T1@", "tools = [\"a\"]\nresources = { default = [\"*\"] }");
  EXPECT_TRUE(Contains(error_of(v1), "`resources` and `prompts` need the v2 form"));
}

}  // namespace
}  // namespace sb::config::test
