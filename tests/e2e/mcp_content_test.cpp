// End to end: a computer's resources, prompts and completions under each caller's grant
// (docs/protocol.md, "Resources, prompts and completions"; docs/configuration.md,
// "Clients"). A fake computer offers three resources, a template, two prompts and
// completions; owner is granted everything, alice a URI pattern and one prompt, bob none.
#include <gtest/gtest.h>

#include <string>

#include "tests/e2e/fidelity_helpers.hpp"

namespace sbtest {
namespace {

json resource(const std::string& uri) {
  return json{{"name", uri}, {"uri", uri}};
}

FakeComputerOptions content_computer() {
  FakeComputerOptions options;
  options.more_capabilities = json{
      {"resources", json::object()}, {"prompts", json::object()}, {"completions", json::object()}};
  options.replies["resources/list"] = json{
      {"result",
       {{"cacheScope", "public"},
        {"resources", json::array({resource("file:///srv/report.md"),
                                   resource("file:///srv/secret.txt"), resource("test://static")})},
        {"ttlMs", 60000}}}};
  options.replies["resources/templates/list"] =
      json{{"result",
            {{"resourceTemplates",
              json::array({{{"name", "file"}, {"uriTemplate", "file:///srv/{name}"}},
                           {{"name", "doc"}, {"uriTemplate", "file:///srv/{dir}/{name}.md"}}})}}}};
  options.replies["resources/read"] = json{
      {"result",
       {{"contents", json::array({{{"uri", "file:///srv/report.md"}, {"text", "the report"}}})}}}};
  options.replies["prompts/list"] =
      json{{"result", {{"prompts", json::array({{{"name", "greet"}}, {{"name", "admin"}}})}}}};
  options.replies["prompts/get"] = json{
      {"result",
       {{"messages",
         json::array({{{"role", "user"}, {"content", {{"type", "text"}, {"text", "hello"}}}}})}}}};
  options.replies["completion/complete"] =
      json{{"result", {{"completion", {{"values", json::array({"a", "b"})}}}}}};
  return options;
}

class Content : public AlphaTest {
 protected:
  Secret bob_ = new_secret();

  ConfigBuilder config() const {
    return AlphaTest::config()
        .client_key("resources", R"({ alpha = ["file:///srv/*.md"] })")
        .client_key("prompts", R"({ alpha = ["greet"] })")
        .client("bob", bob_, R"({ alpha = ["echo"] })")
        .client("root", root_, R"({ "*" = ["*"] })", "alpha")
        .client_key("resources", R"({ "*" = ["*"] })")
        .client_key("prompts", R"({ "*" = ["*"] })");
  }

  json ask(const SwitchboardProcess& sb, const Secret& who, const json& body) const {
    const auto response = post_mcp(sb.port(), kPath, who.secret, body);
    EXPECT_EQ(response.status, 200) << response.body;
    return response.json();
  }

  Secret root_ = new_secret();
};

std::vector<std::string> members(const json& reply, const std::string& list,
                                 const std::string& key) {
  std::vector<std::string> out;
  for (const auto& item : reply["result"][list]) out.push_back(item[key]);
  return out;
}

TEST_F(Content, EachCallerSeesExactlyItsGrantAndANarrowedListIsPrivate) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb, content_computer());
  ASSERT_TRUE(fake);

  const json alices = ask(sb, alice_, rpc(1, "resources/list"));
  EXPECT_EQ(members(alices, "resources", "uri"), std::vector<std::string>{"file:///srv/report.md"});
  // The computer's cache hints are 2026-07-28's: not for a caller of an older revision.
  EXPECT_FALSE(alices["result"].contains("cacheScope")) << alices;
  EXPECT_FALSE(alices["result"].contains("ttlMs")) << alices;
  const json roots = ask(sb, root_, rpc(2, "resources/list"));
  EXPECT_EQ(members(roots, "resources", "uri").size(), 3u);
  const auto stateless_list = [&](const Secret& who) {
    const auto response = http(sb.port(), stateless(who.secret, 7, "resources/list"));
    EXPECT_EQ(response.status, 200) << response.body;
    return response.json()["result"];
  };
  const json alices_2026 = stateless_list(alice_);
  EXPECT_EQ(alices_2026["cacheScope"], "private") << alices_2026;
  EXPECT_EQ(alices_2026["ttlMs"], 60000);
  EXPECT_EQ(stateless_list(root_)["cacheScope"], "public") << "nothing was narrowed for root";
  const json bobs = ask(sb, bob_, rpc(3, "resources/list"));
  EXPECT_EQ(bobs["result"]["resources"], json::array());

  EXPECT_EQ(members(ask(sb, alice_, rpc(4, "prompts/list")), "prompts", "name"),
            std::vector<std::string>{"greet"});
  EXPECT_EQ(members(ask(sb, root_, rpc(5, "prompts/list")), "prompts", "name"),
            (std::vector<std::string>{"greet", "admin"}));
  EXPECT_EQ(ask(sb, bob_, rpc(6, "prompts/list"))["result"]["prompts"], json::array());

  // A template only when every URI it can name is granted: alice's `file:///srv/*.md`
  // covers `…/{dir}/{name}.md`, not `…/{name}`, which can name secret.txt.
  const json alices_templates = ask(sb, alice_, rpc(7, "resources/templates/list"));
  EXPECT_EQ(members(alices_templates, "resourceTemplates", "uriTemplate"),
            std::vector<std::string>{"file:///srv/{dir}/{name}.md"});
  EXPECT_FALSE(alices_templates["result"].contains("cacheScope")) << "not of alice's revision";
  EXPECT_EQ(members(ask(sb, root_, rpc(8, "resources/templates/list")), "resourceTemplates",
                    "uriTemplate"),
            (std::vector<std::string>{"file:///srv/{name}", "file:///srv/{dir}/{name}.md"}));
  EXPECT_EQ(ask(sb, bob_, rpc(9, "resources/templates/list"))["result"]["resourceTemplates"],
            json::array());
  // bob's lists never reached the computer.
  EXPECT_EQ(fake->requests("resources/list").size(), 4u) << "alice's and root's, twice";
  EXPECT_EQ(fake->requests("prompts/list").size(), 2u);
  EXPECT_EQ(fake->requests("resources/templates/list").size(), 2u);
}

TEST_F(Content, AReadOrGetOutsideTheGrantIsAnsweredAsAnUnknownOneWithoutReachingTheComputer) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb, content_computer());
  ASSERT_TRUE(fake);
  const auto read = [&](const Secret& who, const std::string& uri) {
    return post_mcp(sb.port(), kPath, who.secret, rpc("r", "resources/read", json{{"uri", uri}}))
        .body;
  };
  // One the computer has and one it has not: the same bytes but for the URI itself.
  std::string denied = read(alice_, "file:///srv/secret.txt");
  const std::string unknown = read(alice_, "file:///srv/nothing.txt");
  denied.replace(denied.find("secret.txt"), 10, "nothing.txt");
  EXPECT_EQ(denied, unknown);
  EXPECT_EQ(error_code(json::parse(unknown)), -32602) << unknown;
  EXPECT_EQ(error_code(json::parse(read(bob_, "file:///srv/report.md"))), -32602);

  const auto get = [&](const Secret& who, const std::string& name) {
    return post_mcp(sb.port(), kPath, who.secret, rpc("g", "prompts/get", json{{"name", name}}))
        .body;
  };
  std::string denied_prompt = get(alice_, "admin");
  const std::string unknown_prompt = get(alice_, "nosuch");
  denied_prompt.replace(denied_prompt.find("admin"), 5, "nosuch");
  EXPECT_EQ(denied_prompt, unknown_prompt);
  EXPECT_EQ(error_code(json::parse(get(bob_, "greet"))), -32602);

  EXPECT_TRUE(fake->requests("resources/read").empty());
  EXPECT_TRUE(fake->requests("prompts/get").empty());
  // Audit lines are written at the end of the loop's turn: waited for, not read at once.
  const auto is_denial = [](const json& line) { return line.value("outcome", "") == "denied"; };
  EXPECT_TRUE(sb.audit().wait_for_count("call", 6, is_denial)) << sb.diagnostics();
  EXPECT_EQ(sb.audit().count("call", is_denial), 6u);
}

TEST_F(Content, AGrantedReadAndGetReachTheComputerAndAreAudited) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb, content_computer());
  ASSERT_TRUE(fake);
  const json read = ask(sb, alice_, rpc(1, "resources/read", json{{"uri", "file:///srv/a.md"}}));
  EXPECT_EQ(read["result"]["contents"][0]["text"], "the report") << read;
  ASSERT_EQ(fake->requests("resources/read").size(), 1u);
  EXPECT_EQ(fake->requests("resources/read")[0]["params"]["uri"], "file:///srv/a.md");
  const json got = ask(sb, alice_, rpc(2, "prompts/get", json{{"name", "greet"}}));
  EXPECT_EQ(got["result"]["messages"][0]["content"]["text"], "hello") << got;

  const auto resource_line = sb.audit().wait_for(
      "call", [](const json& line) { return line.value("kind", "") == "resource"; });
  ASSERT_TRUE(resource_line);
  EXPECT_EQ((*resource_line)["uri"], "file:///srv/a.md");
  EXPECT_EQ((*resource_line)["principal"], "alice");
  EXPECT_EQ((*resource_line)["computer"], "alpha");
  EXPECT_EQ((*resource_line)["outcome"], "ok");
  EXPECT_GT((*resource_line)["response_bytes"].get<int>(), 0);
  const auto prompt_line = sb.audit().wait_for(
      "call", [](const json& line) { return line.value("kind", "") == "prompt"; });
  ASSERT_TRUE(prompt_line);
  EXPECT_EQ((*prompt_line)["prompt"], "greet");
  EXPECT_EQ((*prompt_line)["outcome"], "ok");
}

TEST_F(Content, ACompletionIsForwardedOnlyForWhatTheCallerMayUse) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb, content_computer());
  ASSERT_TRUE(fake);
  const auto complete = [&](const json& ref) {
    return ask(sb, alice_,
               rpc(1, "completion/complete",
                   json{{"ref", ref}, {"argument", {{"name", "x"}, {"value", ""}}}}));
  };
  EXPECT_EQ(
      complete(json{{"type", "ref/prompt"}, {"name", "greet"}})["result"]["completion"]["values"],
      json::array({"a", "b"}));
  EXPECT_EQ(complete(json{{"type", "ref/resource"},
                          {"uri", "file:///srv/{x}.md"}})["result"]["completion"]["values"],
            json::array({"a", "b"}));
  EXPECT_EQ(
      complete(json{{"type", "ref/prompt"}, {"name", "admin"}})["result"]["completion"]["values"],
      json::array());
  EXPECT_EQ(complete(json{{"type", "ref/resource"},
                          {"uri", "file:///etc/{x}"}})["result"]["completion"]["values"],
            json::array());
  // `file:///srv/{x}` can name more than `*.md`: a template is completed as it is listed.
  EXPECT_EQ(complete(json{{"type", "ref/resource"},
                          {"uri", "file:///srv/{x}"}})["result"]["completion"]["values"],
            json::array());
  EXPECT_EQ(fake->requests("completion/complete").size(), 2u);
}

TEST_F(Content, CapabilitiesFollowTheGrantAndAComputerThatOffersNoneGetsNothingForwarded) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb);  // tools only
  ASSERT_TRUE(fake);
  const json alices = ask(sb, alice_, initialize_request(1))["result"]["capabilities"];
  EXPECT_TRUE(alices.contains("resources")) << alices;
  EXPECT_TRUE(alices.contains("prompts")) << alices;
  EXPECT_TRUE(alices.contains("completions")) << alices;
  const json bobs = ask(sb, bob_, initialize_request(1))["result"]["capabilities"];
  EXPECT_FALSE(bobs.contains("resources")) << bobs;
  EXPECT_FALSE(bobs.contains("prompts")) << bobs;
  EXPECT_FALSE(bobs.contains("completions")) << bobs;

  EXPECT_EQ(ask(sb, root_, rpc(1, "resources/list"))["result"]["resources"], json::array());
  EXPECT_EQ(error_code(ask(sb, root_, rpc(2, "prompts/get", json{{"name", "greet"}}))), -32602);
  EXPECT_TRUE(fake->requests("resources/list").empty());
  EXPECT_TRUE(fake->requests("prompts/get").empty());
}

}  // namespace
}  // namespace sbtest
