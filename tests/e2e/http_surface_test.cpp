// End to end: the HTTP surface with no computer attached (docs/protocol.md, "Routes",
// "Local answers", "Tool list", "Calls"), caller and computer authentication
// ("Authentication"), and the HTTP details of POST /mcp ("POST /mcp": 405, 413, 400, 202).
#include <gtest/gtest.h>

#include <regex>

#include "tests/e2e/e2e_helpers.hpp"

namespace sbtest {
namespace {

constexpr std::string_view kRealm = R"(Bearer realm="openab-sb")";

class HttpSurface : public ::testing::Test {
 protected:
  Secret alpha_ = new_secret();
  Secret beta_ = new_secret();
  Secret owner_ = new_secret();
  Secret alice_ = new_secret();

  ConfigBuilder config() const {
    return ConfigBuilder()
        .computer("alpha", alpha_)
        .computer("beta", beta_)
        .client("owner", owner_, R"({ "*" = ["*"] })", "alpha")
        .client("alice", alice_, R"({ alpha = ["echo"] })");
  }
};

// ---------------------------------------------------------------------------------------
// The offline surface

TEST_F(HttpSurface, HealthzAnswersOkWithoutTokenAndWithoutComputers) {
  SwitchboardProcess sb(config());
  const auto response = http_get(sb.port(), "/healthz");
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.body, "ok");
}

TEST_F(HttpSurface, TheAuditFileAndControlSocketAreBornOwnerOnly) {
  SwitchboardProcess sb(config());
  EXPECT_EQ(http_get(sb.port(), "/computers", "wrong").status, 401);
  ASSERT_TRUE(sb.audit().wait_for("client_auth_fail"));
  EXPECT_EQ(fs::status(sb.audit_path()).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  ASSERT_TRUE(fs::is_socket(sb.control_socket()));
  EXPECT_EQ(fs::status(sb.control_socket()).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
}

TEST_F(HttpSurface, ReadyzIs503VmOfflineWhileNothingIsAttached) {
  SwitchboardProcess sb(config());
  const auto response = http_get(sb.port(), "/readyz");
  EXPECT_EQ(response.status, 503);
  EXPECT_EQ(response.body, "vm offline");
  EXPECT_EQ(http_get(sb.port(), "/readyz/alpha", alice_.secret).status, 503);
  EXPECT_EQ(http_get(sb.port(), "/readyz/alpha", alice_.secret).body, "vm offline");
}

TEST_F(HttpSurface, InitializeWorksOfflineAndNamesTheComputer) {
  SwitchboardProcess sb(config());
  const auto response = post_mcp(sb.port(), "/mcp", alice_.secret,
                                 rpc(7, "initialize", json{{"protocolVersion", "2025-03-26"}}));
  ASSERT_EQ(response.status, 200);
  EXPECT_EQ(response.header("Content-Type"), "application/json");
  const json reply = response.json();
  EXPECT_EQ(reply["id"], 7);
  EXPECT_EQ(reply["jsonrpc"], "2.0");
  const json& result = reply["result"];
  EXPECT_EQ(result["protocolVersion"], "2025-03-26");
  EXPECT_EQ(result["serverInfo"]["name"], "openab-sb");
  EXPECT_EQ(result["capabilities"], (json{{"tools", {{"listChanged", false}}}}));
  const std::string instructions = result.value("instructions", "");
  EXPECT_NE(instructions.find("`alpha`"), std::string::npos) << instructions;
  EXPECT_NE(instructions.find("not connected"), std::string::npos) << instructions;

  // The path names the computer; an unknown protocol version gets the newest
  // (docs/protocol.md, "Revisions").
  const json other = post_mcp(sb.port(), "/mcp/beta", owner_.secret,
                              rpc("x", "initialize", json{{"protocolVersion", "1999-01-01"}}))
                         .json();
  EXPECT_EQ(other["id"], "x");
  EXPECT_EQ(other["result"]["protocolVersion"], "2025-11-25");
  EXPECT_NE(other["result"].value("instructions", "").find("`beta`"), std::string::npos);
}

TEST_F(HttpSurface, ToolsListOfflineGivesOnlyVmStatus) {
  SwitchboardProcess sb(config());
  const json reply = list_tools(sb.port(), "/mcp", alice_.secret, 3);
  EXPECT_EQ(reply["id"], 3);
  ASSERT_EQ(tool_names(reply), std::vector<std::string>{"vm_status"});
  const json& tool = reply["result"]["tools"][0];
  EXPECT_NE(tool.value("description", "").find("`alpha`"), std::string::npos);
  EXPECT_EQ(tool["inputSchema"]["type"], "object");
}

TEST_F(HttpSurface, ToolsCallOfflineIsAToolResultSayingTheVmIsNotConnected) {
  SwitchboardProcess sb(config());
  const json reply = call_tool(sb.port(), "/mcp", alice_.secret, "echo", json{{"x", 1}}, 9);
  EXPECT_EQ(reply["id"], 9);
  EXPECT_FALSE(reply.contains("error")) << reply;
  EXPECT_EQ(reply["result"]["isError"], true);
  EXPECT_NE(result_text(reply).find("the VM is not connected"), std::string::npos) << reply;
  const auto line = sb.audit().wait_for("call", fields_equal({{"tool", "echo"}}));
  ASSERT_TRUE(line);
  EXPECT_EQ((*line)["outcome"], "not_attached");
  EXPECT_EQ((*line)["error_code"], -32001);
  EXPECT_EQ((*line)["principal"], "alice");
  EXPECT_EQ((*line)["computer"], "alpha");
}

TEST_F(HttpSurface, VmStatusOfflineReportsNotAttached) {
  SwitchboardProcess sb(config());
  const json reply = call_tool(sb.port(), "/mcp", alice_.secret, "vm_status");
  EXPECT_EQ(reply["result"]["isError"], false);
  EXPECT_EQ(reply["result"]["structuredContent"],
            (json{{"attached", false}, {"computer", "alpha"}, {"ready", false}}));
  EXPECT_EQ(json::parse(result_text(reply)), reply["result"]["structuredContent"]);
}

TEST_F(HttpSurface, GenSecretPrintsASecretAndItsVerifier) {
  SwitchboardProcess sb(config());
  const auto result = sb.run_cli({"gen-secret"}, /*with_config=*/false);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  std::smatch match;
  ASSERT_TRUE(std::regex_match(
      result.out, match, std::regex("secret:   ([0-9a-f]{64})\nverifier: (sha256:[0-9a-f]{64})\n")))
      << result.out;
  EXPECT_EQ(match[2].str(), verifier_of(match[1].str()));
}

// ---------------------------------------------------------------------------------------
// Authentication

TEST_F(HttpSurface, AClientTokenCannotAttachAComputer) {
  SwitchboardProcess sb(config());
  FakeComputer fake(sb.port(), FakeComputerOptions{.secret = alice_.secret});
  EXPECT_EQ(fake.attach(), 401);
  EXPECT_EQ(fake.refusal().header("WWW-Authenticate"), std::string(kRealm));
  EXPECT_EQ(fake.refusal().body, "unauthorized");
  const auto line = sb.audit().wait_for("vm_auth_fail");
  ASSERT_TRUE(line);
  EXPECT_NE((*line).value("peer", "").find("127.0.0.1:"), std::string::npos) << *line;
  EXPECT_EQ(sb.audit().count("vm_attach"), 0u);

  // No token at all is refused the same way.
  FakeComputer anonymous(sb.port(), FakeComputerOptions{});
  EXPECT_EQ(anonymous.attach(), 401);
  EXPECT_TRUE(sb.audit().wait_for_count("vm_auth_fail", 2));
}

TEST_F(HttpSurface, AComputerSecretIsNotACallerToken) {
  SwitchboardProcess sb(config());
  const auto response = post_mcp(sb.port(), "/mcp/alpha", alpha_.secret, rpc(1, "tools/list"));
  EXPECT_EQ(response.status, 401);
  EXPECT_EQ(response.body, "unauthorized");
  EXPECT_TRUE(sb.audit().wait_for("client_auth_fail"));
}

TEST_F(HttpSurface, EveryClientRouteWithoutAValidTokenIs401) {
  SwitchboardProcess sb(config());
  const std::string ping = rpc(1, "ping").dump();
  const std::vector<HttpRequest> routes{
      {.method = "POST", .target = "/mcp", .body = ping},
      {.method = "POST", .target = "/mcp/alpha", .body = ping},
      {.method = "POST", .target = "/mcp/nosuch", .body = ping},
      {.method = "GET", .target = "/mcp"},
      {.method = "DELETE", .target = "/mcp"},
      {.method = "GET", .target = "/mcp/alpha"},
      {.method = "GET", .target = "/computers"},
      {.method = "GET", .target = "/status"},
      {.method = "GET", .target = "/readyz/alpha"},
      {.method = "HEAD", .target = "/mcp"},
  };
  int failures = 0;
  for (std::optional<std::string> token :
       {std::optional<std::string>{}, std::optional<std::string>{"not-a-token"}}) {
    for (auto request : routes) {
      request.token = token;
      const auto response = http(sb.port(), request);
      ++failures;
      SCOPED_TRACE(request.method + " " + request.target + (token ? " (wrong token)" : ""));
      EXPECT_EQ(response.status, 401);
      EXPECT_EQ(response.header("WWW-Authenticate"), std::string(kRealm));
      if (request.method != "HEAD") {
        EXPECT_EQ(response.body, "unauthorized");
      }
    }
  }
  // A scheme other than Bearer carries no token.
  auto basic = routes[6];
  basic.headers.emplace_back("Authorization", "Basic " + alice_.secret);
  EXPECT_EQ(http(sb.port(), basic).status, 401);
  ++failures;
  // One client_auth_fail line each, up to the cap of 20 per window (docs/protocol.md,
  // "Audit log").
  EXPECT_TRUE(sb.audit().wait_for_count("client_auth_fail", 20));
  EXPECT_EQ(failures, 21);
  EXPECT_EQ(sb.audit().count("client_auth_fail"), 20u);
}

// ---------------------------------------------------------------------------------------
// HTTP details of /mcp

TEST_F(HttpSurface, GetOnMcpWithATokenIs405PostOnly) {
  SwitchboardProcess sb(config());
  for (const std::string target : {"/mcp", "/mcp/alpha"}) {
    for (const std::string method : {"GET", "DELETE", "HEAD"}) {
      SCOPED_TRACE(method + " " + target);
      const auto response =
          http(sb.port(), HttpRequest{.method = method, .target = target, .token = alice_.secret});
      EXPECT_EQ(response.status, 405);
      EXPECT_EQ(response.header("Allow"), "POST");
      if (method != "HEAD") {
        EXPECT_EQ(response.body, "POST only");
      }
    }
  }
}

TEST_F(HttpSurface, ABodyOverOneMebibyteIs413AndOneMebibyteIsAccepted) {
  SwitchboardProcess sb(config());
  const std::string ping = rpc(1, "ping").dump();
  std::string exactly = ping + std::string(1024 * 1024 - ping.size(), ' ');
  ASSERT_EQ(exactly.size(), 1024u * 1024u);
  const auto accepted = http(
      sb.port(),
      HttpRequest{.method = "POST", .target = "/mcp", .body = exactly, .token = alice_.secret});
  EXPECT_EQ(accepted.status, 200);
  EXPECT_EQ(accepted.json()["result"], json::object());

  const auto refused =
      http(sb.port(),
           HttpRequest{
               .method = "POST", .target = "/mcp", .body = exactly + " ", .token = alice_.secret});
  EXPECT_EQ(refused.status, 413);
  // The switchboard is still serving afterwards.
  EXPECT_EQ(http_get(sb.port(), "/healthz").status, 200);
}

TEST_F(HttpSurface, ExpectContinueIsAnswered) {
  SwitchboardProcess sb(config());
  const auto response = http(sb.port(), HttpRequest{.method = "POST",
                                                    .target = "/mcp",
                                                    .body = rpc(1, "ping").dump(),
                                                    .token = alice_.secret,
                                                    .headers = {{"Expect", "100-continue"}}});
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.json()["result"], json::object());
}

TEST_F(HttpSurface, AChunkedBodyOverOneMebibyteIs413Too) {
  SwitchboardProcess sb(config());
  const std::string ping = rpc(1, "ping").dump();
  auto chunked = [&](std::string body) {
    return http(sb.port(), HttpRequest{.method = "POST",
                                       .target = "/mcp",
                                       .body = std::move(body),
                                       .token = alice_.secret,
                                       .headers = {{"Transfer-Encoding", "chunked"}}});
  };
  EXPECT_EQ(chunked(ping).status, 200);
  EXPECT_EQ(chunked(ping + std::string(1024 * 1024, ' ')).status, 413);
  EXPECT_EQ(http_get(sb.port(), "/healthz").status, 200);
}

TEST_F(HttpSurface, InvalidJsonIs400ParseErrorWithNullId) {
  SwitchboardProcess sb(config());
  for (const std::string body : {"{", "", "not json", R"({"id":1,)"}) {
    SCOPED_TRACE("body: " + body);
    const auto response =
        http(sb.port(),
             HttpRequest{.method = "POST", .target = "/mcp", .body = body, .token = alice_.secret});
    EXPECT_EQ(response.status, 400);
    EXPECT_EQ(response.header("Content-Type"), "application/json");
    EXPECT_EQ(response.json(), (json{{"error", {{"code", kParseError}, {"message", "parse error"}}},
                                     {"id", nullptr},
                                     {"jsonrpc", "2.0"}}));
  }
}

TEST_F(HttpSurface, BatchesAreRefusedWith400) {
  SwitchboardProcess sb(config());
  for (const json& batch : {json::array(), json::array({rpc(1, "ping"), rpc(2, "ping")})}) {
    SCOPED_TRACE(batch.dump());
    const auto response = post_mcp(sb.port(), "/mcp", alice_.secret, batch);
    EXPECT_EQ(response.status, 400);
    const json reply = response.json();
    EXPECT_EQ(error_code(reply), kInvalidRequest);
    EXPECT_TRUE(reply["id"].is_null());
    EXPECT_NE(reply["error"].value("message", "").find("batch"), std::string::npos) << reply;
  }
}

TEST_F(HttpSurface, NotificationsAndResponsesAre202AndNeverReachTheComputer) {
  SwitchboardProcess sb(config());
  auto fake = attach_ready(sb, alpha_, "alpha", alice_.secret);
  ASSERT_TRUE(fake);
  const std::vector<json> swallowed{
      json{{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}},
      json{{"jsonrpc", "2.0"},
           {"method", "notifications/cancelled"},
           {"params", {{"requestId", 1}}}},
      json{{"jsonrpc", "2.0"}, {"id", 5}, {"result", json::object()}},
  };
  for (const auto& message : swallowed) {
    SCOPED_TRACE(message.dump());
    const auto response = post_mcp(sb.port(), "/mcp", alice_.secret, message);
    EXPECT_EQ(response.status, 202);
    EXPECT_EQ(response.body, "");
    EXPECT_FALSE(response.has_header("Content-Type"));
  }
  // A call afterwards is the barrier: everything before it has been handled.
  EXPECT_EQ(echoed(call_tool(sb.port(), "/mcp", alice_.secret, "echo", json{{"n", 1}})),
            (json{{"n", 1}}));
  for (const auto& frame : fake->frames()) {
    const std::string method = frame.value("method", "");
    EXPECT_TRUE(method == "initialize" || method == "notifications/initialized" ||
                method == "tools/call")
        << "forwarded: " << frame;
  }
}

TEST_F(HttpSurface, PingAndUnknownMethodsAreAnsweredLocally) {
  SwitchboardProcess sb(config());
  auto fake = attach_ready(sb, alpha_, "alpha", alice_.secret);
  ASSERT_TRUE(fake);
  EXPECT_EQ(post_mcp(sb.port(), "/mcp", alice_.secret, rpc(1, "ping")).json(),
            (json{{"id", 1}, {"jsonrpc", "2.0"}, {"result", json::object()}}));
  const auto unknown = post_mcp(sb.port(), "/mcp", alice_.secret, rpc(2, "sampling/createMessage"));
  EXPECT_EQ(unknown.status, 200);
  EXPECT_EQ(error_code(unknown.json()), kMethodNotFound);
  EXPECT_EQ(unknown.json()["id"], 2);
  const auto no_method =
      post_mcp(sb.port(), "/mcp", alice_.secret, json{{"jsonrpc", "2.0"}, {"id", 3}});
  EXPECT_EQ(no_method.status, 200);
  EXPECT_EQ(error_code(no_method.json()), kInvalidRequest);
  EXPECT_EQ(no_method.json()["error"]["message"], "missing method");
  const auto scalar = post_mcp(sb.port(), "/mcp", alice_.secret, json(5));
  EXPECT_EQ(scalar.status, 200);
  EXPECT_EQ(error_code(scalar.json()), kInvalidRequest);
  EXPECT_TRUE(scalar.json()["id"].is_null());
  // Nothing of the above was forwarded.
  EXPECT_TRUE(fake->requests("ping").empty());
  EXPECT_TRUE(fake->requests("resources/list").empty());
}

TEST_F(HttpSurface, PathsThatMatchNoRouteAreAnEmpty404) {
  SwitchboardProcess sb(config());
  for (const std::string target : {"/nope", "/mcp/", "/mcp/alpha/extra", "/readyz/"}) {
    SCOPED_TRACE(target);
    const auto response = http_get(sb.port(), target, alice_.secret);
    EXPECT_EQ(response.status, 404);
    EXPECT_EQ(response.body, "");
  }
}

TEST_F(HttpSurface, GetRoutesAnswerHeadAndOtherMethodsAre405) {
  SwitchboardProcess sb(config());
  const auto healthz = http(sb.port(), HttpRequest{.method = "HEAD", .target = "/healthz"});
  EXPECT_EQ(healthz.status, 200);
  EXPECT_EQ(healthz.body, "");
  EXPECT_EQ(http(sb.port(), HttpRequest{.method = "HEAD", .target = "/readyz"}).status, 503);
  EXPECT_EQ(
      http(sb.port(), HttpRequest{.method = "HEAD", .target = "/computers", .token = alice_.secret})
          .status,
      200);
  EXPECT_EQ(http(sb.port(), HttpRequest{.method = "HEAD", .target = "/vm/attach"}).status, 405);
  const auto post_status =
      http(sb.port(), HttpRequest{.method = "POST", .target = "/status", .token = alice_.secret});
  EXPECT_EQ(post_status.status, 405);
  EXPECT_EQ(post_status.header("Allow"), "GET,HEAD");
  EXPECT_EQ(post_status.body, "");
}

TEST_F(HttpSurface, ThePeerLabelPrefersTailscaleThenTheFirstForwardedForEntry) {
  SwitchboardProcess sb(config());
  auto failing_request = [&](Headers headers) {
    HttpConnection connection(sb.port());
    const int port = connection.local_port();
    const auto response = connection.request(
        HttpRequest{.target = "/computers", .headers = std::move(headers)}, false);
    EXPECT_EQ(response.status, 401);
    return "127.0.0.1:" + std::to_string(port);
  };
  const std::string plain = failing_request({});
  const std::string tailscale = failing_request(
      {{"Tailscale-User-Login", "ops@example.com"}, {"X-Forwarded-For", "10.9.9.9"}});
  // Not visible ASCII: no forwarded identity from it, so X-Forwarded-For's first entry.
  const std::string forwarded =
      failing_request({{"Tailscale-User-Login", "caf\xc3\xa9@example.com"},
                       {"X-Forwarded-For", "10.1.2.3, 10.0.0.1"}});
  ASSERT_TRUE(sb.audit().wait_for_count("client_auth_fail", 3));
  const auto lines = sb.audit().events("client_auth_fail");
  EXPECT_EQ(lines[0]["peer"], plain);
  EXPECT_EQ(lines[1]["peer"], "ops@example.com via " + tailscale);
  EXPECT_EQ(lines[2]["peer"], "10.1.2.3 via " + forwarded) << "falls back to X-Forwarded-For";
}

// The summary comes from a timer when the 60 s window ends (docs/protocol.md, "Audit log").
// The window opens with the audit log, so this waits at most a minute.
// The window is 60 s (shared/timings.hpp); 8 s here, ample for 25 local requests.
TEST_F(HttpSurface, AuthFailuresOverTheCapAreSummarisedWhenTheWindowEnds) {
  TestTimings timings("audit_window=8000");
  SwitchboardProcess sb(config());
  for (int i = 0; i < 25; ++i) {
    EXPECT_EQ(http_get(sb.port(), "/computers", "wrong-" + std::to_string(i)).status, 401);
  }
  ASSERT_TRUE(sb.audit().wait_for_count("client_auth_fail", 20));
  EXPECT_EQ(sb.audit().count("client_auth_fail"), 20u);
  const auto summary = sb.audit().wait_for("auth_failures_suppressed", {}, 20s);
  ASSERT_TRUE(summary) << "no summary after the window";
  EXPECT_EQ((*summary)["count"], 5);
  EXPECT_EQ((*summary)["window_secs"], 8);
  // A new window: failures are written again.
  EXPECT_EQ(http_get(sb.port(), "/computers", "wrong-again").status, 401);
  EXPECT_TRUE(sb.audit().wait_for_count("client_auth_fail", 21));
}

}  // namespace
}  // namespace sbtest
