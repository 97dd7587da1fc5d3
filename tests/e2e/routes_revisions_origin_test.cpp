// End to end: full-fidelity MCP through the relay (docs/protocol.md), at the HTTP edge.
// Protocol revisions and their headers; Origin and CORS; and frames that are not exactly
// one message.
#include <gtest/gtest.h>

#include <algorithm>
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
    const json error = response.json();
    EXPECT_EQ(error_code(error), -32022) << response.body;
    EXPECT_EQ(error["id"], body["id"]) << "the request's id, not null";
    EXPECT_EQ(error["error"]["data"]["requested"], "1999-01-01");
    EXPECT_EQ(error["error"]["data"]["supported"],
              json::array({"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"}));
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

// ---------------------------------------------------------------------------------------
// 2026-07-28 to the letter (docs/protocol.md, "Revisions"): what the revision requires of a
// request, checked before anything is sent, and the HTTP status of each error.

void expect_refused(const HttpResponse& response, int status, int code, const json& id) {
  EXPECT_EQ(response.status, status) << response.body;
  EXPECT_EQ(error_code(response.json()), code) << response.body;
  EXPECT_EQ(response.json()["id"], id) << "an error carries the request's id: " << response.body;
}

TEST_F(Fidelity, AStatelessRequestNeedsItsMetaAndHeadersBeforeAnythingIsSent) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  const json echo{{"name", "echo"}, {"arguments", {{"n", 1}}}};

  HttpRequest request = stateless(alice_.secret, 1, "tools/list", json{{"_meta", json::object()}});
  expect_refused(http(sb.port(), request), 400, kInvalidParams, 1);
  request = stateless(alice_.secret, 2, "tools/list",
                      json{{"_meta", {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"}}}});
  expect_refused(http(sb.port(), request), 400, kInvalidParams, 2);
  request.body = rpc(3, "tools/list").dump();  // no params at all
  expect_refused(http(sb.port(), request), 400, kInvalidParams, 3);
  // A notification needs no _meta: a cancellation without one is taken (202).
  request.headers = with(with(kAcceptBoth, "MCP-Protocol-Version", "2026-07-28"), "Mcp-Method",
                         "notifications/cancelled");
  request.body = cancel_notification(99).dump();
  EXPECT_EQ(http(sb.port(), request).status, 202);

  // Mcp-Method always, Mcp-Name for what names a tool, a prompt, a resource or a task.
  request = stateless(alice_.secret, "m", "tools/call", echo, "echo");
  request.headers.erase(std::remove_if(request.headers.begin(), request.headers.end(),
                                       [](const auto& h) { return h.first == "Mcp-Method"; }),
                        request.headers.end());
  expect_refused(http(sb.port(), request), 400, -32020, "m");
  expect_refused(http(sb.port(), stateless(alice_.secret, "n", "tools/call", echo)), 400, -32020,
                 "n");
  expect_refused(http(sb.port(), stateless(alice_.secret, "u", "resources/read",
                                           json{{"uri", "file:///a"}}, "file:///b")),
                 400, -32020, "u");

  // The header's revision and _meta's must agree, which is checked before either is
  // judged supported; one both name that is not served is -32022, with what is.
  request = stateless(alice_.secret, 4, "tools/list",
                      json{{"_meta",
                            {{"io.modelcontextprotocol/protocolVersion", "v999.0.0"},
                             {"io.modelcontextprotocol/clientCapabilities", json::object()}}}});
  expect_refused(http(sb.port(), request), 400, -32020, 4);
  request.headers =
      with(with(kAcceptBoth, "MCP-Protocol-Version", "v999.0.0"), "Mcp-Method", "tools/list");
  const auto unsupported = http(sb.port(), request);
  expect_refused(unsupported, 400, -32022, 4);
  EXPECT_EQ(unsupported.json()["error"]["data"]["requested"], "v999.0.0");
  EXPECT_EQ(unsupported.json()["error"]["data"]["supported"].back(), "2026-07-28");

  // One of MCP's headers twice, even with the same value: which was meant, nobody can tell.
  request = stateless(alice_.secret, "d", "tools/call", echo, "echo");
  request.headers.emplace_back("mcp-name", "echo");
  expect_refused(http(sb.port(), request), 400, -32020, "d");

  EXPECT_TRUE(fake->calls().empty()) << "nothing refused reached the computer";
  const auto served = http(sb.port(), stateless(alice_.secret, 5, "tools/call", echo, "echo"));
  EXPECT_EQ(served.status, 200) << served.body;
  EXPECT_EQ(echoed(served.json()), (json{{"n", 1}}));
}

TEST_F(Fidelity, TheMethodsTheStatelessRevisionRemovedAre404) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  int id = 0;
  for (const std::string method : {"initialize", "ping", "logging/setLevel", "resources/subscribe",
                                   "resources/unsubscribe", "tasks/result", "tasks/list"}) {
    SCOPED_TRACE(method);
    const auto response = http(sb.port(), stateless(alice_.secret, ++id, method));
    expect_refused(response, 404, kMethodNotFound, id);
    EXPECT_FALSE(response.has_header("Mcp-Session-Id"));
  }
  expect_refused(http(sb.port(), stateless(alice_.secret, "x", "no/such/method")), 404,
                 kMethodNotFound, "x");
  // An older caller is answered as before.
  EXPECT_EQ(post_mcp(sb.port(), kPath, alice_.secret, rpc(9, "ping")).status, 200);
  EXPECT_EQ(post_mcp(sb.port(), kPath, alice_.secret, rpc(10, "no/such/method")).status, 200);
}

TEST_F(Fidelity, AComputersErrorTakesTheStatusTheStatelessRevisionGivesIt) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  const auto call_failing_with = [&](int code, bool stateless_caller) {
    const json params{{"name", "echo"}, {"arguments", {{"mode", "error"}, {"code", code}}}};
    if (stateless_caller)
      return http(sb.port(), stateless(alice_.secret, code, "tools/call", params, "echo"));
    return http(sb.port(), post(kPath, alice_.secret, rpc(code, "tools/call", params)));
  };
  expect_refused(call_failing_with(-32601, true), 404, kMethodNotFound, -32601);
  expect_refused(call_failing_with(-32021, true), 400, -32021, -32021);
  expect_refused(call_failing_with(-32603, true), 200, -32603, -32603);
  expect_refused(call_failing_with(-32601, false), 200, kMethodNotFound, -32601);
  expect_refused(call_failing_with(-32021, false), 200, -32021, -32021);
}

TEST_F(Fidelity, TheSwitchboardsOwnStatelessResultsCarryWhatTheRevisionRequires) {
  SwitchboardProcess sb(config());
  const auto discovered = http(sb.port(), stateless(alice_.secret, 1, "server/discover"));
  ASSERT_EQ(discovered.status, 200) << discovered.body;
  const json discover = discovered.json()["result"];
  EXPECT_EQ(discover["resultType"], "complete");
  EXPECT_EQ(discover["ttlMs"], 0);
  EXPECT_EQ(discover["cacheScope"], "private");
  // No computer attached: the tool list is vm_status alone, shaped as a list.
  const json list = http(sb.port(), stateless(alice_.secret, 2, "tools/list")).json()["result"];
  EXPECT_EQ(list["resultType"], "complete") << list;
  EXPECT_EQ(list["ttlMs"], 0);
  EXPECT_EQ(list["cacheScope"], "private");
  const json status = http(sb.port(), stateless(alice_.secret, 3, "tools/call",
                                                json{{"name", "vm_status"}}, "vm_status"))
                          .json()["result"];
  EXPECT_EQ(status["resultType"], "complete") << status;
  const json offline =
      http(sb.port(), stateless(alice_.secret, 4, "tools/call", json{{"name", "echo"}}, "echo"))
          .json()["result"];
  EXPECT_EQ(offline["resultType"], "complete") << offline;
  EXPECT_EQ(offline["isError"], true);
}

// A computer of an older revision writes no resultType; a 2026-07-28 client refuses a
// result without one (docs/protocol.md, "Revisions"). An older caller's result is the
// computer's as it was written.
TEST_F(Fidelity, AnOlderComputersResultReachesAStatelessCallerWithTheRevisionsMembers) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  const json stateless_reply =
      http(sb.port(), stateless(alice_.secret, 1, "tools/call",
                                json{{"name", "echo"}, {"arguments", {{"n", 1}}}}, "echo"))
          .json();
  EXPECT_EQ(echoed(stateless_reply), (json{{"n", 1}})) << stateless_reply;
  EXPECT_EQ(stateless_reply["result"]["resultType"], "complete") << stateless_reply;

  const json older = call_tool(sb.port(), kPath, alice_.secret, "echo", json{{"n", 2}}, 2);
  EXPECT_EQ(echoed(older), (json{{"n", 2}})) << older;
  EXPECT_FALSE(older["result"].contains("resultType")) << "passed through as it was written";
}

TEST_F(Fidelity, McpParamHeadersAreCheckedAgainstTheArgumentsTheToolListNamed) {
  SwitchboardProcess sb(config());
  const json region{{"type", "string"}, {"x-mcp-header", "Region"}};
  const json count{{"type", "integer"}, {"x-mcp-header", "Count"}};
  FakeComputerOptions options;
  options.tools = json::array(
      {json{{"name", "echo"},
            {"inputSchema",
             {{"type", "object"}, {"properties", {{"region", region}, {"n", count}}}}}},
       json{{"name", "secret_tool"},
            {"inputSchema", {{"type", "object"}, {"properties", {{"region", region}}}}}}});
  auto fake = attach_alpha(sb, options);
  ASSERT_TRUE(fake);
  const json arguments{{"region", "Zürich"}, {"n", 3}};
  const auto call = [&](const json& id, const Headers& params, const std::string& tool = "echo") {
    HttpRequest request = stateless(alice_.secret, id, "tools/call",
                                    json{{"name", tool}, {"arguments", arguments}}, tool);
    for (const auto& header : params) request.headers.push_back(header);
    return http(sb.port(), request);
  };
  const Headers good{{"Mcp-Param-Region", "=?base64?WsO8cmljaA==?="}, {"mcp-param-count", "3"}};

  // Before any list has shown the schema, nothing is known to check.
  EXPECT_EQ(call(1, {}).status, 200);
  ASSERT_EQ(http(sb.port(), stateless(owner_.secret, 2, "tools/list")).status, 200);

  const auto served = call(3, good);
  EXPECT_EQ(served.status, 200) << served.body;
  EXPECT_EQ(echoed(served.json()), arguments);
  expect_refused(call(4, {good[1]}), 400, -32020, 4);  // Region missing
  expect_refused(call(5, {{"Mcp-Param-Region", "=?base64?WsO8cmljaA=?="}, good[1]}), 400, -32020,
                 5);  // not Base64
  expect_refused(call(6, {{"Mcp-Param-Region", "Zurich"}, good[1]}), 400, -32020, 6);
  expect_refused(call(7, {good[0], {"Mcp-Param-Count", "4"}}), 400, -32020, 7);
  const auto refused_count = fake->calls().size();
  HttpRequest without_region = stateless(alice_.secret, 8, "tools/call",
                                         json{{"name", "echo"}, {"arguments", {{"n", 3}}}}, "echo");
  without_region.headers.push_back(good[0]);
  expect_refused(http(sb.port(), without_region), 400, -32020, 8);  // no such argument
  EXPECT_EQ(fake->calls().size(), refused_count) << "a refused call reached the computer";

  // alice may not call secret_tool: it is answered as an unknown tool, headers unread.
  // The answer names the tool it was asked for, and is otherwise byte for byte alike.
  const auto unknown = call(9, {}, "secret_tool");
  std::string nonexistent = call(9, {}, "tool_secret").body;
  nonexistent.replace(nonexistent.find("tool_secret"), 11, "secret_tool");
  EXPECT_EQ(unknown.status, 200);
  EXPECT_EQ(unknown.body, nonexistent);
}

}  // namespace
}  // namespace sbtest
