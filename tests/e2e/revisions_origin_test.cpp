// End to end: full-fidelity MCP through the relay (docs/protocol.md), at the HTTP edge.
// Protocol revisions and their headers; Origin and CORS; and frames that are not exactly
// one message.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "tests/e2e/fidelity_helpers.hpp"

namespace sbtest {
namespace {

// ---------------------------------------------------------------------------------------
// Protocol revisions (docs/protocol.md, "Revisions")

TEST_F(Fidelity, InitializeAnswersTheRevisionAskedForOrTheNewest) {
  SwitchboardProcess sb(config());
  for (const std::string version : {"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}) {
    const json reply =
        post_mcp(sb.port(), kPath, alice_.secret, initialize_request(1, version)).json();
    EXPECT_EQ(reply["result"]["protocolVersion"], version) << reply;
  }
  for (const std::string version : {"1999-01-01", "2025-01-01", "2099-12-31"}) {
    const json reply =
        post_mcp(sb.port(), kPath, alice_.secret, initialize_request(1, version)).json();
    EXPECT_EQ(reply["result"]["protocolVersion"], "2025-11-25") << version << ": " << reply;
  }
}

TEST_F(Fidelity, AnUnsupportedProtocolVersionHeaderIs400AndASupportedOneIsServed) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  const Headers bad = with(kAcceptBoth, "MCP-Protocol-Version", "1999-01-01");
  for (const json& body : {rpc(1, "ping"), tool_call(2, "echo", json{{"n", 2}})}) {
    SCOPED_TRACE(body.dump());
    const auto response = http(sb.port(), post(kPath, alice_.secret, body, bad));
    EXPECT_EQ(response.status, 400);
    EXPECT_EQ(error_code(response.json()), kInvalidRequest) << response.body;
    EXPECT_NE(response.body.find("2025-11-25"), std::string::npos)
        << "the error should name the supported revisions: " << response.body;
  }
  const Headers good = with(kAcceptBoth, "MCP-Protocol-Version", "2025-06-18");
  const auto served =
      http(sb.port(), post(kPath, alice_.secret, tool_call(3, "echo", json{{"n", 3}}), good));
  EXPECT_EQ(served.status, 200) << served.body;
  EXPECT_EQ(echoed(served.final_message()), (json{{"n", 3}}));
  // The refused call never reached the computer.
  ASSERT_EQ(fake->calls().size(), 1u);
  EXPECT_EQ(fake->calls()[0]["params"]["arguments"], (json{{"n", 3}}));
}

// ---------------------------------------------------------------------------------------
// Origin (docs/protocol.md, "Origin and CORS")

TEST_F(Fidelity, AForeignOriginIs403BeforeAnythingElse) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  const Headers evil = with(kAcceptBoth, "Origin", "http://evil.example");
  const json body = tool_call(1, "echo", json{{"from", "evil"}});
  // With a valid token, with a wrong one, with none: 403 every time, not 401.
  const std::optional<std::string> tokens[] = {alice_.secret, std::string("wrong"), std::nullopt};
  for (const auto& token : tokens) {
    HttpRequest request = post(kPath, "", body, evil);
    request.token = token;
    EXPECT_EQ(http(sb.port(), request).status, 403) << (token ? *token : "(no token)");
  }
  // Nothing reached the computer: the next call is its first.
  EXPECT_EQ(echoed(call_tool(sb.port(), kPath, alice_.secret, "echo", json{{"n", 1}})),
            (json{{"n", 1}}));
  ASSERT_EQ(fake->calls().size(), 1u);
  EXPECT_EQ(fake->calls()[0]["params"]["arguments"], (json{{"n", 1}}));
}

TEST_F(Fidelity, LoopbackOriginsAreServed) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  int n = 0;
  for (const std::string origin : {"http://localhost:6274", "http://127.0.0.1:3000",
                                   "https://localhost", "http://[::1]:8080"}) {
    SCOPED_TRACE(origin);
    ++n;
    const auto response =
        http(sb.port(), post(kPath, alice_.secret, tool_call(n, "echo", json{{"n", n}}),
                             with(kAcceptBoth, "Origin", origin)));
    EXPECT_EQ(response.status, 200) << response.body;
    EXPECT_EQ(echoed(response.final_message()), (json{{"n", n}}));
  }
}

TEST_F(Fidelity, AnAllowedOriginGetsCorsHeadersAndItsPreflightIsAnswered) {
  SwitchboardProcess sb(config().allowed_origins({"https://app.example"}));
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  const std::string origin = "https://app.example";

  const auto preflight =
      http(sb.port(), HttpRequest{.method = "OPTIONS",
                                  .target = kPath,
                                  .headers = {{"Origin", origin},
                                              {"Access-Control-Request-Method", "POST"},
                                              {"Access-Control-Request-Headers",
                                               "authorization, content-type, mcp-session-id, "
                                               "mcp-protocol-version"}}});
  EXPECT_TRUE(preflight.status == 204 || preflight.status == 200) << preflight.status;
  EXPECT_EQ(preflight.header("Access-Control-Allow-Origin"), origin);
  for (const char* allowed :
       {"Authorization", "Content-Type", "Mcp-Session-Id", "MCP-Protocol-Version"}) {
    EXPECT_TRUE(header_lists(preflight, "Access-Control-Allow-Headers", allowed))
        << allowed << " not in " << preflight.header("Access-Control-Allow-Headers").value_or("");
  }
  EXPECT_TRUE(header_lists(preflight, "Access-Control-Expose-Headers", "Mcp-Session-Id"))
      << preflight.header("Access-Control-Expose-Headers").value_or("(none)");

  const auto initialized = http(sb.port(), post(kPath, alice_.secret, initialize_request(1),
                                                with(kAcceptBoth, "Origin", origin)));
  EXPECT_EQ(initialized.status, 200);
  EXPECT_EQ(initialized.header("Access-Control-Allow-Origin"), origin);
  // A page reads the session id only if the response itself exposes it.
  EXPECT_TRUE(initialized.has_header("Mcp-Session-Id"));
  EXPECT_TRUE(header_lists(initialized, "Access-Control-Expose-Headers", "Mcp-Session-Id"))
      << initialized.header("Access-Control-Expose-Headers").value_or("(none)");
  const auto called =
      http(sb.port(), post(kPath, alice_.secret, tool_call(2, "echo", json{{"n", 2}}),
                           with(kAcceptBoth, "Origin", origin)));
  EXPECT_EQ(called.status, 200);
  EXPECT_EQ(called.header("Access-Control-Allow-Origin"), origin);
  EXPECT_EQ(echoed(called.final_message()), (json{{"n", 2}}));

  // The list holds exact origins: another scheme or host is foreign.
  for (const std::string other : {"http://app.example", "https://app.example.evil.example"}) {
    EXPECT_EQ(http(sb.port(),
                   post(kPath, alice_.secret, rpc(3, "ping"), with(kAcceptBoth, "Origin", other)))
                  .status,
              403)
        << other;
  }
}

// ---------------------------------------------------------------------------------------
// Diagnostics (docs/protocol.md, "Frames from the computer")

TEST_F(Fidelity, AFrameThatIsNotExactlyOneMessageAnswersNoCall) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  CallInFlight pending(sb.port(), kPath, alice_.secret, "echo", hold(1), "held");
  const json seen = computer_call(*fake, hold(1));
  ASSERT_FALSE(seen.is_null());
  const json wrong_reply{
      {"jsonrpc", "2.0"}, {"id", seen["id"]}, {"result", text_result("wrong")["result"]}};

  // Two messages on two lines, the reply first; then the reply inside a bare array.
  fake->send_text(
      wrong_reply.dump() + "\n" +
      R"({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}})");
  fake->send_text("[" + wrong_reply.dump() + "]");
  // The proper frame, after both: it alone answers the call.
  fake->answer(id_of(seen), text_result("right"));
  const json reply = pending.wait();
  EXPECT_EQ(reply["id"], "held");
  EXPECT_EQ(result_text(reply), "right") << "a refused frame answered the call";

  // Nothing crashed: the session is still up and serves the next call.
  EXPECT_EQ(echoed(call_tool(sb.port(), kPath, alice_.secret, "echo", json{{"n", 2}})),
            (json{{"n", 2}}));
  EXPECT_FALSE(fake->closed());
  EXPECT_TRUE(process_alive(sb.pid()));
  EXPECT_EQ(sb.audit().count("vm_detach"), 0u);
}

// ---------------------------------------------------------------------------------------
// 2026-07-28 headers (docs/protocol.md, "Revisions")

TEST_F(Fidelity, McpMethodAndMcpNameHeadersMustAgreeWithTheBody) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  const json body = tool_call(1, "echo", json{{"n", 1}});
  const auto wrong_method = http(
      sb.port(), post(kPath, alice_.secret, body, with(kAcceptBoth, "Mcp-Method", "tools/list")));
  EXPECT_EQ(wrong_method.status, 400);
  EXPECT_EQ(error_code(wrong_method.json()), -32020) << wrong_method.body;
  const auto wrong_name = http(
      sb.port(), post(kPath, alice_.secret, body,
                      with(with(kAcceptBoth, "Mcp-Method", "tools/call"), "Mcp-Name", "slow")));
  EXPECT_EQ(wrong_name.status, 400);
  EXPECT_EQ(error_code(wrong_name.json()), -32020) << wrong_name.body;
  EXPECT_TRUE(fake->calls().empty());

  const auto agreeing = http(
      sb.port(), post(kPath, alice_.secret, body,
                      with(with(kAcceptBoth, "Mcp-Method", "tools/call"), "Mcp-Name", "echo")));
  EXPECT_EQ(agreeing.status, 200);
  EXPECT_EQ(echoed(agreeing.json()), (json{{"n", 1}}));
}

TEST_F(Fidelity, AStatelessCallerDiscoversTheServerAndCallsWithoutInitialize) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  const json meta{{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                  {"io.modelcontextprotocol/clientCapabilities", json::object()}};
  const Headers headers = with(kAcceptBoth, "MCP-Protocol-Version", "2026-07-28");
  const auto discovered =
      http(sb.port(), post(kPath, alice_.secret, rpc("d", "server/discover", json{{"_meta", meta}}),
                           with(headers, "Mcp-Method", "server/discover")));
  ASSERT_EQ(discovered.status, 200) << discovered.body;
  const json result = discovered.json()["result"];
  EXPECT_EQ(result["resultType"], "complete");
  EXPECT_EQ(result["supportedVersions"].back(), "2026-07-28") << result;
  EXPECT_TRUE(result["capabilities"].contains("tools"));
  EXPECT_EQ(result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "openab-sb");
  EXPECT_TRUE(result["instructions"].is_string());
  EXPECT_TRUE(fake->requests("server/discover").empty()) << "answered by the switchboard";

  json params{{"name", "echo"}, {"arguments", {{"n", 7}}}, {"_meta", meta}};
  const auto called =
      http(sb.port(), post(kPath, alice_.secret, rpc(2, "tools/call", params),
                           with(with(headers, "Mcp-Method", "tools/call"), "Mcp-Name", "echo")));
  ASSERT_EQ(called.status, 200) << called.body;
  EXPECT_EQ(echoed(called.json()), (json{{"n", 7}}));
  // The request's _meta reaches the computer as the caller wrote it.
  EXPECT_EQ(fake->calls().back()["params"]["_meta"], meta);

  // The revision in the header and the one in _meta must agree.
  const auto disagreeing =
      http(sb.port(), post(kPath, alice_.secret, rpc(3, "tools/call", params),
                           with(kAcceptBoth, "MCP-Protocol-Version", "2025-11-25")));
  EXPECT_EQ(disagreeing.status, 400);
  EXPECT_EQ(error_code(disagreeing.json()), -32020) << disagreeing.body;
}

}  // namespace
}  // namespace sbtest
