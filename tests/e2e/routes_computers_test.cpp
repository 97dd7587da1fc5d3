// End to end: the routes that name computers (docs/protocol.md, "Routes"). /mcp/{computer},
// /computers and /readyz/{computer} for allowed computers; unknown computers without a
// token are 401; unknown and not-allowed are indistinguishable; /readyz reveals no names; a
// "*" caller's /mcp does not change when a computer is added; peer and in_flight only for
// "*" callers.
#include <gtest/gtest.h>

#include "tests/e2e/e2e_helpers.hpp"

namespace sbtest {
namespace {

class Routes : public ::testing::Test {
 protected:
  // Config order zulu, alpha, beta (not sorted): listings follow config order.
  Secret zulu_ = new_secret();
  Secret alpha_ = new_secret();
  Secret beta_ = new_secret();
  Secret delta_ = new_secret();
  Secret owner_ = new_secret();
  Secret alice_ = new_secret();
  Secret carol_ = new_secret();

  ConfigBuilder config(bool with_delta = false) const {
    ConfigBuilder builder;
    builder.computer("zulu", zulu_).computer("alpha", alpha_).computer("beta", beta_);
    if (with_delta) builder.computer("delta", delta_);
    builder.client("owner", owner_, R"({ "*" = ["*"] })", "zulu")
        .client("alice", alice_, R"({ alpha = ["*"], zulu = ["echo"] })", "alpha")
        .client("carol", carol_, R"({ beta = ["echo"] })");
    return builder;
  }
};

TEST_F(Routes, McpComputersAndReadyzWorkForAllowedComputers) {
  SwitchboardProcess sb(config());
  auto zulu = attach_ready(sb, zulu_, "zulu", owner_.secret);
  auto alpha = attach_ready(sb, alpha_, "alpha", owner_.secret);
  ASSERT_TRUE(zulu && alpha);

  const auto computers = http_get(sb.port(), "/computers", alice_.secret);
  EXPECT_EQ(computers.status, 200);
  EXPECT_EQ(computers.header("Content-Type"), "application/json");
  EXPECT_EQ(
      computers.json(),
      (json::array({{{"attached", true}, {"default", false}, {"name", "zulu"}, {"ready", true}},
                    {{"attached", true}, {"default", true}, {"name", "alpha"}, {"ready", true}}})));
  EXPECT_EQ(http_get(sb.port(), "/computers", owner_.secret).json(),
            (json::array(
                {{{"attached", true}, {"default", true}, {"name", "zulu"}, {"ready", true}},
                 {{"attached", true}, {"default", false}, {"name", "alpha"}, {"ready", true}},
                 {{"attached", false}, {"default", false}, {"name", "beta"}, {"ready", false}}})));
  EXPECT_EQ(http_get(sb.port(), "/computers", carol_.secret).json(),
            (json::array(
                {{{"attached", false}, {"default", true}, {"name", "beta"}, {"ready", false}}})));

  for (const std::string name : {"alpha", "zulu"}) {
    const auto ready = http_get(sb.port(), "/readyz/" + name, alice_.secret);
    EXPECT_EQ(ready.status, 200) << name;
    EXPECT_EQ(ready.body, "ok");
  }
  const auto offline = http_get(sb.port(), "/readyz/beta", carol_.secret);
  EXPECT_EQ(offline.status, 503);
  EXPECT_EQ(offline.body, "vm offline");

  // /mcp/{computer} reaches that computer, /mcp the caller's default, with its own policy.
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp/zulu", alice_.secret, "echo", json{{"z", 1}})),
            (json{{"z", 1}}));
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp", alice_.secret, "echo", json{{"a", 1}})),
            (json{{"a", 1}}));
  EXPECT_EQ(zulu->calls().size(), 1u);
  EXPECT_EQ(alpha->calls().size(), 1u);
  EXPECT_EQ(tool_names(list_tools(sb.port(), "/mcp/zulu", alice_.secret)),
            (std::vector<std::string>{"echo", "vm_status"}));
  EXPECT_EQ(tool_names(list_tools(sb.port(), "/mcp/alpha", alice_.secret)),
            (std::vector<std::string>{"echo", "slow", "secret_tool", "vm_status"}));

  const json status = http_get(sb.port(), "/status", alice_.secret).json();
  ASSERT_EQ(status["computers"].size(), 2u);
  EXPECT_EQ(status["computers"][0]["computer"], "zulu");
  EXPECT_EQ(status["computers"][1]["computer"], "alpha");
  EXPECT_EQ(status["vm"]["computer"], "alpha");
}

TEST_F(Routes, AnUnknownComputerWithoutATokenIs401LikeAKnownOne) {
  SwitchboardProcess sb(config());
  const std::string ping = rpc(1, "ping").dump();
  for (const std::string name : {"nosuch", "alpha"}) {
    SCOPED_TRACE(name);
    const auto post =
        http(sb.port(), HttpRequest{.method = "POST", .target = "/mcp/" + name, .body = ping});
    const auto probe = http(sb.port(), HttpRequest{.method = "GET", .target = "/mcp/" + name});
    const auto ready = http_get(sb.port(), "/readyz/" + name);
    for (const auto* response : {&post, &probe, &ready}) {
      EXPECT_EQ(response->status, 401);
      EXPECT_EQ(response->body, "unauthorized");
      EXPECT_EQ(response->header("WWW-Authenticate"), R"(Bearer realm="openab-sb")");
    }
  }
  EXPECT_EQ(
      http(sb.port(), HttpRequest{.method = "POST", .target = "/mcp/nosuch", .body = ping}).headers,
      http(sb.port(), HttpRequest{.method = "POST", .target = "/mcp/alpha", .body = ping}).headers);
}

// 401 comes first (docs/protocol.md, "Routes"), whatever the path says, so a segment that
// does not even percent-decode is 401 without a token too (only the body cap may answer
// before it).
TEST_F(Routes, AnUndecodableComputerSegmentWithoutATokenIs401) {
  SwitchboardProcess sb(config());
  const std::string ping = rpc(1, "ping").dump();
  for (const std::string target : {"/mcp/%zz", "/mcp/a%2"}) {
    SCOPED_TRACE(target);
    const auto post =
        http(sb.port(), HttpRequest{.method = "POST", .target = target, .body = ping});
    EXPECT_EQ(post.status, 401) << post.body;
    EXPECT_EQ(http(sb.port(), HttpRequest{.method = "GET", .target = target}).status, 401);
  }
  const auto ready = http_get(sb.port(), "/readyz/%zz");
  EXPECT_EQ(ready.status, 401) << ready.body;
}

TEST_F(Routes, UnknownAndNotAllowedComputersGetIdenticalResponses) {
  SwitchboardProcess sb(config());
  auto beta = attach_ready(sb, beta_, "beta", owner_.secret);  // exists, attached, not alice's
  ASSERT_TRUE(beta);
  // Counted once the attach's own line is written: audit lines wait for the end of the loop
  // turn, and may come after the computer is ready.
  ASSERT_TRUE(sb.audit().wait_for("vm_attach", fields_equal({{"computer", "beta"}})));
  const std::size_t audit_lines = sb.audit().lines().size();
  const std::string list = rpc(1, "tools/list").dump();
  const std::string call = tool_call(1, "echo", json{{"x", 1}}).dump();
  auto compare = [&](HttpRequest not_allowed, HttpRequest unknown) {
    SCOPED_TRACE(not_allowed.method + " " + not_allowed.target + " vs " + unknown.target);
    const auto a = http(sb.port(), not_allowed);
    const auto b = http(sb.port(), unknown);
    EXPECT_EQ(a.status, b.status);
    EXPECT_EQ(a.headers, b.headers);
    EXPECT_EQ(a.body, b.body);
    return a;
  };
  for (const auto& body : {list, call}) {
    const auto response =
        compare({.method = "POST", .target = "/mcp/beta", .body = body, .token = alice_.secret},
                {.method = "POST", .target = "/mcp/nosuch", .body = body, .token = alice_.secret});
    EXPECT_EQ(response.status, 404);
    EXPECT_EQ(response.body, "no such computer");
    EXPECT_EQ(response.header("Content-Type"), "text/plain; charset=utf-8");
  }
  const auto ready = compare({.method = "GET", .target = "/readyz/beta", .token = alice_.secret},
                             {.method = "GET", .target = "/readyz/nosuch", .token = alice_.secret});
  EXPECT_EQ(ready.status, 404);
  EXPECT_EQ(ready.body, "no such computer");
  for (const std::string method : {"GET", "HEAD", "DELETE"}) {
    compare({.method = method, .target = "/mcp/beta", .token = alice_.secret},
            {.method = method, .target = "/mcp/nosuch", .token = alice_.secret});
  }
  // Percent-encoding does not tell them apart either.
  compare({.method = "POST", .target = "/mcp/b%65ta", .body = list, .token = alice_.secret},
          {.method = "POST", .target = "/mcp/n%6Fsuch", .body = list, .token = alice_.secret});
  // Nothing reached the computer and nothing was audited.
  EXPECT_TRUE(beta->calls().empty());
  EXPECT_TRUE(beta->requests("tools/list").empty());
  EXPECT_EQ(sb.audit().lines().size(), audit_lines);
}

TEST_F(Routes, ReadyzBodiesCarryNoNamesOrCounts) {
  SwitchboardProcess sb(config());
  auto check = [&](int status, const std::string& body) {
    const auto response = http_get(sb.port(), "/readyz");
    EXPECT_EQ(response.status, status);
    EXPECT_EQ(response.body, body);
    for (const auto& [name, value] : response.headers) {
      for (const char* computer : {"zulu", "alpha", "beta"})
        EXPECT_EQ(value.find(computer), std::string::npos) << name << ": " << value;
    }
  };
  check(503, "vm offline");
  auto zulu = attach_ready(sb, zulu_, "zulu", owner_.secret);
  ASSERT_TRUE(zulu);
  check(200, "ok");
  auto alpha = attach_ready(sb, alpha_, "alpha", owner_.secret);
  ASSERT_TRUE(alpha);
  check(200, "ok");
}

TEST_F(Routes, ReadyzWithSeveralComputersIs200WhenAnyIsReady) {
  SwitchboardProcess sb(config());
  EXPECT_EQ(http_get(sb.port(), "/readyz").status, 503);
  auto beta = attach_ready(sb, beta_, "beta", carol_.secret);  // the last one configured
  ASSERT_TRUE(beta);
  EXPECT_EQ(http_get(sb.port(), "/readyz").status, 200);
  EXPECT_EQ(http_get(sb.port(), "/readyz/zulu", owner_.secret).status, 503);
  beta->drop();
  EXPECT_TRUE(eventually([&] { return http_get(sb.port(), "/readyz").status == 503; }));
  EXPECT_EQ(http_get(sb.port(), "/readyz").body, "vm offline");
}

TEST_F(Routes, AStarCallersMcpIsUnchangedWhenAComputerIsAdded) {
  SwitchboardProcess sb(config());
  auto zulu = attach_ready(sb, zulu_, "zulu", owner_.secret);
  ASSERT_TRUE(zulu);
  const json tools_before = list_tools(sb.port(), "/mcp", owner_.secret);
  const json init_before = post_mcp(sb.port(), "/mcp", owner_.secret, rpc(1, "initialize")).json();

  sb.reload(config(/*with_delta=*/true));
  // The new computer is the owner's at once, and attached with a different tool set.
  ASSERT_FALSE(computers_entry(sb, owner_.secret, "delta").is_null());
  auto delta =
      attach_ready(sb, delta_, "delta", owner_.secret,
                   FakeComputerOptions{.tools = json::array({tool_definition("delta_only")})});
  ASSERT_TRUE(delta);
  EXPECT_EQ(tool_names(list_tools(sb.port(), "/mcp/delta", owner_.secret)),
            (std::vector<std::string>{"delta_only", "vm_status"}));

  EXPECT_EQ(list_tools(sb.port(), "/mcp", owner_.secret), tools_before);
  EXPECT_EQ(post_mcp(sb.port(), "/mcp", owner_.secret, rpc(1, "initialize")).json(), init_before);
  EXPECT_EQ(zulu->requests("tools/list").size(), 2u);
  EXPECT_TRUE(delta->requests("tools/list").size() == 1u);
}

TEST_F(Routes, PeerAndInFlightAreShownOnlyToStarCallers) {
  SwitchboardProcess sb(config());
  auto alpha =
      attach_ready(sb, alpha_, "alpha", owner_.secret,
                   FakeComputerOptions{.headers = {{"Tailscale-User-Login", "ops@example.com"}}});
  ASSERT_TRUE(alpha);
  const std::string peer = "ops@example.com via 127.0.0.1:" + std::to_string(alpha->local_port());
  CallInFlight pending(sb.port(), "/mcp/alpha", owner_.secret, "echo", hold(1));
  ASSERT_TRUE(alpha->wait_for_calls(1));

  auto alpha_status = [&](const std::string& token) {
    const json status = http_get(sb.port(), "/status", token).json();
    for (const auto& entry : status["computers"]) {
      if (entry["computer"] == "alpha") return entry;
    }
    return json();
  };
  // The worker publishes its count right after the frame leaves, so poll for it.
  json owner_view;
  EXPECT_TRUE(eventually([&] {
    owner_view = alpha_status(owner_.secret);
    return owner_view.value("in_flight", -1) == 1;
  })) << owner_view;
  EXPECT_EQ(owner_view["peer"], peer);
  const json alice_view = alpha_status(alice_.secret);
  EXPECT_FALSE(alice_view.contains("peer")) << alice_view;
  EXPECT_FALSE(alice_view.contains("in_flight")) << alice_view;
  for (const char* key :
       {"computer", "attached", "ready", "server", "attached_for_secs", "max_in_flight"}) {
    EXPECT_TRUE(alice_view.contains(key)) << key << " missing: " << alice_view;
  }
  EXPECT_EQ(alice_view["server"], (json{{"name", "fake-computer"}, {"version", "9.9.9"}}));
  EXPECT_EQ(http_get(sb.port(), "/status", alice_.secret).json()["vm"], alice_view);

  const json owner_tool = call_tool(sb.port(), "/mcp/alpha", owner_.secret, "vm_status");
  EXPECT_EQ(owner_tool["result"]["structuredContent"]["peer"], peer);
  EXPECT_EQ(owner_tool["result"]["structuredContent"]["in_flight"], 1);
  const json alice_tool = call_tool(sb.port(), "/mcp/alpha", alice_.secret, "vm_status");
  const json& content = alice_tool["result"]["structuredContent"];
  EXPECT_FALSE(content.contains("peer")) << content;
  EXPECT_FALSE(content.contains("in_flight")) << content;
  EXPECT_EQ(result_text(alice_tool).find("ops@example.com"), std::string::npos);
  EXPECT_EQ(content["computer"], "alpha");

  // /computers never carries them, for anyone.
  for (const auto* token : {&owner_.secret, &alice_.secret}) {
    for (const auto& entry : http_get(sb.port(), "/computers", *token).json()) {
      EXPECT_EQ(entry.size(), 4u) << entry;
    }
  }
  const auto attach_line = sb.audit().wait_for("vm_attach");
  ASSERT_TRUE(attach_line);
  EXPECT_EQ((*attach_line)["peer"], peer);

  alpha->answer_echo(alpha->calls()[0]);
  EXPECT_EQ(echoed(pending.wait()), hold(1));
}

}  // namespace
}  // namespace sbtest
