// End to end: full-fidelity MCP through the relay (docs/protocol.md), from the computer's
// side. Requests from the computer reach the one caller that can answer them; the client
// capabilities the switchboard declares; tasks reach only the client that created them;
// logging only when one client can hear it.
#include <gtest/gtest.h>

#include <string>

#include "tests/e2e/fidelity_helpers.hpp"

namespace sbtest {
namespace {

// ---------------------------------------------------------------------------------------
// Requests from the computer (docs/protocol.md, "Requests from the computer")

const json kElicitParams{{"message", "Which colour?"},
                         {"requestedSchema",
                          {{"type", "object"},
                           {"properties", {{"colour", {{"type", "string"}}}}},
                           {"required", json::array({"colour"})}}}};

json elicitation(const json& id) {
  return json{
      {"jsonrpc", "2.0"}, {"id", id}, {"method", "elicitation/create"}, {"params", kElicitParams}};
}

json accept_answer(const json& id, const json& content) {
  return json{
      {"jsonrpc", "2.0"}, {"id", id}, {"result", {{"action", "accept"}, {"content", content}}}};
}

// The computer's frame answering its own request `id` (null if none came in time).
json answer_to(const FakeComputer& fake, const json& id) {
  return fake.wait_for_frame([&](const json& frame) {
    return has_id(frame, id) && (frame.contains("result") || frame.contains("error"));
  });
}

TEST_F(Fidelity, TheSwitchboardDeclaresSamplingElicitationAndRootsToTheComputer) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  const auto initializes = fake->requests("initialize");
  ASSERT_EQ(initializes.size(), 1u);
  const json capabilities = initializes[0].at("params").value("capabilities", json());
  for (const char* capability : {"sampling", "elicitation", "roots"}) {
    EXPECT_TRUE(capabilities.is_object() && capabilities.contains(capability) &&
                capabilities[capability].is_object())
        << capability << " missing from " << capabilities;
  }
}

TEST_F(Fidelity, AnElicitationReachesTheOnlyCallersStreamAndItsAnswerReachesTheComputer) {
  HeldEcho held(*this, {.id = "ask"});
  ASSERT_TRUE(held.ready());

  held.fake->send_text(elicitation("e-1").dump());
  expect_event_stream_head(held.call.head());
  const json asked = held.call.next();
  EXPECT_EQ(asked["jsonrpc"], "2.0");
  EXPECT_EQ(asked["method"], "elicitation/create");
  EXPECT_EQ(asked["params"], kElicitParams);
  ASSERT_TRUE(asked.contains("id") && !asked["id"].is_null()) << asked;
  const json routed_id = asked["id"];

  // The caller answers on another connection, meanwhile.
  const json content{{"colour", "teal"}};
  const auto accepted =
      http(held.sb.port(), post(kPath, alice_.secret, accept_answer(routed_id, content)));
  EXPECT_EQ(accepted.status, 202);
  EXPECT_EQ(answer_to(*held.fake, "e-1"), accept_answer("e-1", content))
      << "the computer must get its own id back with the caller's result";

  held.fake->answer(id_of(held.seen), text_result("teal it is"));
  const json reply = held.call.next();
  EXPECT_EQ(reply["id"], "ask");
  EXPECT_EQ(result_text(reply), "teal it is");
  EXPECT_TRUE(held.call.next().is_null());
}

TEST_F(Fidelity, WithTwoCallsInFlightARequestFromTheComputerIsRefusedWith32601) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  OpenCall alices(sb.port(), post(kPath, alice_.secret, tool_call(1, "echo", hold(1))));
  OpenCall bobs(sb.port(), post(kPath, bob_.secret, tool_call(2, "echo", hold(2))));
  const json alice_seen = computer_call(*fake, hold(1));
  const json bob_seen = computer_call(*fake, hold(2));
  ASSERT_FALSE(alice_seen.is_null() || bob_seen.is_null());

  fake->send_text(elicitation("e-2").dump());
  const json refused = answer_to(*fake, "e-2");
  EXPECT_EQ(error_code(refused), kMethodNotFound) << refused;

  // Neither caller saw it: with nothing streamed, both replies are plain JSON.
  fake->answer_echo(alice_seen);
  fake->answer_echo(bob_seen);
  const HttpResponse alice_reply = alices.rest();
  expect_plain_json(alice_reply);
  EXPECT_EQ(echoed(alice_reply.json()), hold(1));
  const HttpResponse bob_reply = bobs.rest();
  expect_plain_json(bob_reply);
  EXPECT_EQ(echoed(bob_reply.json()), hold(2));
}

TEST_F(Fidelity, ARequestFromTheComputerIsRefusedWhenItsCallerDoesNotAcceptEventStreams) {
  HeldEcho held(*this, {.headers = kAcceptJsonOnly});
  ASSERT_TRUE(held.ready());
  held.fake->send_text(elicitation("e-3").dump());
  EXPECT_EQ(error_code(answer_to(*held.fake, "e-3")), kMethodNotFound);
  held.answer_and_expect_plain_echo();
}

// A 2026-07-28 caller's revision has no requests from the server: what it declared it can
// take reaches it as an input-required result, and its retry naming the round's
// requestState answers the computer and takes the call up (docs/protocol.md, "Input
// required").
json stateless_echo(const json& declared, const json& more = json::object()) {
  json params{{"name", "echo"}, {"arguments", hold(1)}};
  params["_meta"] = {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                     {"io.modelcontextprotocol/clientCapabilities", declared}};
  params.update(more);
  return params;
}

const json kDeclaresElicitation{{"elicitation", json::object()}};

TEST_F(Fidelity, AnElicitationDuringA2026CallIsAnInputRequiredResultTheRetryAnswers) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  OpenCall open(sb.port(), stateless(alice_.secret, 1, "tools/call",
                                     stateless_echo(kDeclaresElicitation), "echo"));
  const json seen = computer_call(*fake, hold(1));
  ASSERT_FALSE(seen.is_null());
  fake->send_text(elicitation("e-26").dump());
  const HttpResponse asked = open.rest();
  const json round = asked.final_message();
  ASSERT_EQ(round["id"], 1) << asked.body;
  const json result = round["result"];
  EXPECT_EQ(result["resultType"], "input_required") << result;
  ASSERT_EQ(result["inputRequests"].size(), 1u) << result;
  const std::string key = result["inputRequests"].begin().key();
  EXPECT_EQ(result["inputRequests"][key],
            (json{{"method", "elicitation/create"}, {"params", kElicitParams}}));
  const std::string state = result["requestState"];

  // Another caller naming the round, or anyone naming a round never issued: as if none.
  const json answer{{key, {{"action", "accept"}, {"content", {{"colour", "teal"}}}}}};
  const json retry_params =
      stateless_echo(kDeclaresElicitation, {{"inputResponses", answer}, {"requestState", state}});
  const auto bobs = http(sb.port(), stateless(bob_.secret, 2, "tools/call", retry_params, "echo"));
  EXPECT_EQ(bobs.status, 200) << bobs.body;
  EXPECT_EQ(error_code(bobs.json()), kInvalidParams) << bobs.body;
  json forged = retry_params;
  forged["requestState"] = state.substr(0, state.size() - 1) + (state.back() == '0' ? "1" : "0");
  EXPECT_EQ(
      error_code(http(sb.port(), stateless(alice_.secret, 3, "tools/call", forged, "echo")).json()),
      kInvalidParams);

  OpenCall retry(sb.port(), stateless(alice_.secret, 4, "tools/call", retry_params, "echo"));
  EXPECT_EQ(answer_to(*fake, "e-26"), accept_answer("e-26", {{"colour", "teal"}}))
      << "the computer gets its own id back with the caller's result, once";
  fake->answer_echo(seen);
  const json reply = retry.rest().final_message();
  EXPECT_EQ(reply["id"], 4) << "the retry's own id";
  EXPECT_EQ(echoed(reply), hold(1)) << reply;
  EXPECT_EQ(reply["result"]["resultType"], "complete");

  // The round is over: naming it again finds nothing.
  EXPECT_EQ(
      error_code(
          http(sb.port(), stateless(alice_.secret, 5, "tools/call", retry_params, "echo")).json()),
      kInvalidParams);
  EXPECT_EQ(fake->requests("tools/call").size(), 1u) << "one call at the computer throughout";
}

TEST_F(Fidelity, ARequestA2026CallerDidNotDeclareIsRefusedWith32601) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  OpenCall open(sb.port(), stateless(alice_.secret, 1, "tools/call",
                                     stateless_echo({{"sampling", json::object()}}), "echo"));
  const json seen = computer_call(*fake, hold(1));
  ASSERT_FALSE(seen.is_null());
  fake->send_text(elicitation("e-26").dump());
  EXPECT_EQ(error_code(answer_to(*fake, "e-26")), kMethodNotFound);
  fake->answer_echo(seen);
  const HttpResponse reply = open.rest();
  EXPECT_EQ(echoed(reply.final_message()), hold(1)) << reply.body;
  EXPECT_EQ(reply.body.find("elicitation/create"), std::string::npos) << reply.body;
}

TEST_F(Fidelity, APingFromTheComputerIsAnsweredByTheSwitchboardNotTheCaller) {
  HeldEcho held(*this);
  ASSERT_TRUE(held.ready());
  held.fake->send_text(R"({"jsonrpc":"2.0","id":"p-1","method":"ping"})");
  EXPECT_EQ(answer_to(*held.fake, "p-1"),
            (json{{"jsonrpc", "2.0"}, {"id", "p-1"}, {"result", json::object()}}));
  held.answer_and_expect_plain_echo();
}

TEST_F(Fidelity, AnAnswerPostedByAnotherClientNeverReachesTheComputer) {
  HeldEcho held(*this);
  ASSERT_TRUE(held.ready());
  held.fake->send_text(elicitation("e-4").dump());
  const json asked = held.call.next();
  ASSERT_EQ(asked.value("method", ""), "elicitation/create") << asked;
  const json routed_id = asked["id"];

  // bob answers first; alice after him. Had bob's been forwarded, it would have come first.
  EXPECT_EQ(
      http(held.sb.port(), post(kPath, bob_.secret, accept_answer(routed_id, {{"colour", "red"}})))
          .status,
      202);
  EXPECT_EQ(http(held.sb.port(),
                 post(kPath, alice_.secret, accept_answer(routed_id, {{"colour", "blue"}})))
                .status,
            202);
  EXPECT_EQ(answer_to(*held.fake, "e-4"), accept_answer("e-4", {{"colour", "blue"}}));

  held.fake->answer_echo(held.seen);
  EXPECT_EQ(echoed(held.call.next()), hold(1));
  EXPECT_TRUE(held.call.next().is_null());
  std::size_t answers = 0;
  for (const auto& frame : held.fake->frames()) answers += has_id(frame, "e-4") ? 1 : 0;
  EXPECT_EQ(answers, 1u) << "the computer got more than one answer to e-4";
}

// ---------------------------------------------------------------------------------------
// Tasks (docs/protocol.md, "Tasks")

// A computer that creates a task for every tools/call asking for one (its id named by the
// call's arguments), and answers tasks/get and tasks/list.
FakeComputerOptions task_computer() {
  FakeComputerOptions options;
  options.on_call = [](const json& params) {
    if (!params.contains("task")) return scripted_by_arguments(params);
    return CallAction::result(json{
        {"task", {{"taskId", params["arguments"].value("task_id", "")}, {"status", "working"}}}});
  };
  options.replies["tasks/get"] = json{{"result", {{"taskId", "t-alice"}, {"status", "completed"}}}};
  options.replies["tasks/list"] =
      json{{"result",
            {{"tasks", json::array({{{"taskId", "t-alice"}, {"status", "completed"}},
                                    {{"taskId", "t-bob"}, {"status", "working"}},
                                    {{"taskId", "t-elsewhere"}, {"status", "working"}}})}}}};
  return options;
}

json task_call(const json& id, const std::string& task_id) {
  return rpc(
      id, "tools/call",
      json{{"name", "echo"}, {"arguments", {{"task_id", task_id}}}, {"task", {{"ttl", 60000}}}});
}

TEST_F(Fidelity, ATaskIsReachableOnlyByTheClientThatCreatedIt) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb, task_computer());
  ASSERT_TRUE(fake);
  const json created = post_mcp(sb.port(), kPath, alice_.secret, task_call(1, "t-alice")).json();
  EXPECT_EQ(created["result"]["task"]["taskId"], "t-alice") << created;
  post_mcp(sb.port(), kPath, bob_.secret, task_call(2, "t-bob"));

  // The creator reaches its task through the computer.
  const json got =
      post_mcp(sb.port(), kPath, alice_.secret, rpc(3, "tasks/get", json{{"taskId", "t-alice"}}))
          .json();
  EXPECT_EQ(got, (json{{"id", 3},
                       {"jsonrpc", "2.0"},
                       {"result", {{"taskId", "t-alice"}, {"status", "completed"}}}}));
  ASSERT_EQ(fake->requests("tasks/get").size(), 1u);
  EXPECT_EQ(fake->requests("tasks/get")[0]["params"], (json{{"taskId", "t-alice"}}));

  // Another client's task and one that never existed get the same answer, and neither
  // reaches the computer.
  const auto not_yours =
      post_mcp(sb.port(), kPath, bob_.secret, rpc(4, "tasks/get", json{{"taskId", "t-alice"}}));
  const auto not_there =
      post_mcp(sb.port(), kPath, bob_.secret, rpc(4, "tasks/get", json{{"taskId", "t-nothing"}}));
  EXPECT_EQ(not_yours.status, not_there.status);
  EXPECT_EQ(not_yours.body, not_there.body);
  EXPECT_EQ(error_code(not_yours.json()), -32602) << not_yours.body;
  for (const char* method : {"tasks/result", "tasks/cancel"}) {
    const auto refused =
        post_mcp(sb.port(), kPath, bob_.secret, rpc(4, method, json{{"taskId", "t-alice"}}));
    EXPECT_EQ(refused.body, not_there.body) << method;
  }
  EXPECT_EQ(fake->requests("tasks/get").size(), 1u);
  EXPECT_TRUE(fake->requests("tasks/result").empty());
  EXPECT_TRUE(fake->requests("tasks/cancel").empty());

  // tasks/list shows each client its own tasks only.
  const json alices = post_mcp(sb.port(), kPath, alice_.secret, rpc(5, "tasks/list")).json();
  EXPECT_EQ(alices["result"]["tasks"],
            json::array({{{"taskId", "t-alice"}, {"status", "completed"}}}))
      << alices;
  const json bobs = post_mcp(sb.port(), kPath, bob_.secret, rpc(6, "tasks/list")).json();
  EXPECT_EQ(bobs["result"]["tasks"], json::array({{{"taskId", "t-bob"}, {"status", "working"}}}))
      << bobs;
}

// The 2026-07-28 tasks extension (SEP-2663): a caller that declares it in a request's
// _meta may get a task back as the result itself; the task is its own, tasks/update is
// relayed like tasks/get, and a caller that does not declare it is told it needs it.
TEST_F(Fidelity, TheTasksExtensionsTasksBelongToTheirCreatorToo) {
  SwitchboardProcess sb(config());
  FakeComputerOptions options;
  options.more_capabilities =
      json{{"extensions", {{"io.modelcontextprotocol/tasks", json::object()}}}};
  options.on_call = [](const json& params) {
    return CallAction::result(json{{"resultType", "task"},
                                   {"taskId", params["arguments"].value("task_id", "")},
                                   {"status", "working"}});
  };
  options.replies["tasks/update"] = json{{"result", {{"resultType", "complete"}}}};
  auto fake = attach_alpha(sb, options);
  ASSERT_TRUE(fake);
  const json declared{{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                      {"io.modelcontextprotocol/clientCapabilities",
                       {{"extensions", {{"io.modelcontextprotocol/tasks", json::object()}}}}}};
  const json undeclared{{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                        {"io.modelcontextprotocol/clientCapabilities", json::object()}};
  const auto stateless = [&](const Secret& who, const json& id, const std::string& method,
                             json params, const json& meta, const std::string& name) {
    params["_meta"] = meta;
    const Headers headers =
        with(with(with(kAcceptBoth, "MCP-Protocol-Version", "2026-07-28"), "Mcp-Method", method),
             "Mcp-Name", name);
    return http(sb.port(), post(kPath, who.secret, rpc(id, method, params), headers));
  };
  const json discovered =
      stateless(alice_, 1, "server/discover", json::object(), declared, "").json();
  EXPECT_TRUE(
      discovered["result"]["capabilities"]["extensions"].contains("io.modelcontextprotocol/tasks"))
      << discovered;

  const auto created =
      stateless(alice_, 2, "tools/call",
                json{{"name", "echo"}, {"arguments", {{"task_id", "t-ext"}}}}, declared, "echo");
  EXPECT_EQ(created.json()["result"]["resultType"], "task") << created.body;
  const auto updated =
      stateless(alice_, 3, "tasks/update", json{{"taskId", "t-ext"}}, declared, "t-ext");
  EXPECT_EQ(updated.status, 200) << updated.body;
  EXPECT_EQ(updated.json()["result"]["resultType"], "complete");
  ASSERT_EQ(fake->requests("tasks/update").size(), 1u);

  const auto not_yours =
      stateless(bob_, 4, "tasks/update", json{{"taskId", "t-ext"}}, declared, "t-ext");
  EXPECT_EQ(error_code(not_yours.json()), -32602) << not_yours.body;
  const auto undeclaring =
      stateless(alice_, 5, "tasks/get", json{{"taskId", "t-ext"}}, undeclared, "t-ext");
  EXPECT_EQ(undeclaring.status, 400);
  EXPECT_EQ(error_code(undeclaring.json()), -32021) << undeclaring.body;
  EXPECT_EQ(undeclaring.json()["error"]["data"]["requiredCapabilities"]["extensions"],
            (json{{"io.modelcontextprotocol/tasks", json::object()}}));
  EXPECT_EQ(fake->requests("tasks/update").size(), 1u);
  EXPECT_TRUE(fake->requests("tasks/get").empty());
}

TEST_F(Fidelity, ATaskEndsWithTheComputerSessionThatCreatedIt) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb, task_computer());
  ASSERT_TRUE(fake);
  post_mcp(sb.port(), kPath, alice_.secret, task_call(1, "t-alice"));
  fake->close(1000);
  ASSERT_TRUE(wait_not_ready(sb, owner_.secret, "alpha"));
  auto again = attach_alpha(sb, task_computer());
  ASSERT_TRUE(again);
  const json got =
      post_mcp(sb.port(), kPath, alice_.secret, rpc(2, "tasks/get", json{{"taskId", "t-alice"}}))
          .json();
  EXPECT_EQ(error_code(got), -32602) << got;
  EXPECT_TRUE(again->requests("tasks/get").empty());
}

TEST_F(Fidelity, ATasksStatusReachesOnlyTheClientThatOwnsIt) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb, task_computer());
  ASSERT_TRUE(fake);
  post_mcp(sb.port(), kPath, alice_.secret, task_call(1, "t-alice"));
  OpenCall bobs(sb.port(), post(kPath, bob_.secret, tool_call(2, "echo", hold(2))));
  OpenCall alices(sb.port(), post(kPath, alice_.secret, tool_call(3, "echo", hold(3))));
  const json bob_seen = computer_call(*fake, hold(2));
  const json alice_seen = computer_call(*fake, hold(3));
  ASSERT_FALSE(bob_seen.is_null());
  ASSERT_FALSE(alice_seen.is_null());

  const json status{{"jsonrpc", "2.0"},
                    {"method", "notifications/tasks/status"},
                    {"params", {{"taskId", "t-alice"}, {"status", "completed"}}}};
  fake->send_text(status.dump());
  EXPECT_EQ(alices.next(), status);
  // A status of a task nobody recorded goes nowhere.
  fake->send_text(
      R"({"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"t-nobody","status":"failed"}})");
  fake->answer_echo(alice_seen);
  EXPECT_EQ(echoed(alices.next()), hold(3));
  EXPECT_TRUE(alices.next().is_null());
  fake->answer_echo(bob_seen);
  const HttpResponse bob_reply = bobs.rest();
  expect_plain_json(bob_reply);
  EXPECT_EQ(echoed(bob_reply.json()), hold(2));
}

// ---------------------------------------------------------------------------------------
// Logging under the one-client rule (docs/protocol.md, "Requests from the computer")

TEST_F(Fidelity, WithSeveralClientsLoggingStaysOffTheSharedSocket) {
  SwitchboardProcess sb(config());
  FakeComputerOptions options;
  options.offers_logging = true;
  auto fake = attach_alpha(sb, options);
  ASSERT_TRUE(fake);
  const json set = post_mcp(sb.port(), kPath, alice_.secret,
                            rpc(1, "logging/setLevel", json{{"level", "debug"}}))
                       .json();
  EXPECT_EQ(set, (json{{"id", 1}, {"jsonrpc", "2.0"}, {"result", json::object()}}));

  // A log line during alice's call reaches nobody: the reply stays plain JSON.
  OpenCall call(sb.port(), post(kPath, alice_.secret, tool_call(2, "echo", hold(1))));
  const json seen = computer_call(*fake, hold(1));
  ASSERT_FALSE(seen.is_null());
  fake->send_text(
      R"({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"secret of bob"}})");
  fake->answer(id_of(seen), text_result("done"));
  const auto reply = call.rest();
  expect_plain_json(reply);
  EXPECT_EQ(result_text(reply.json()), "done");
  EXPECT_TRUE(fake->requests("logging/setLevel").empty());
}

// alice alone can reach alpha, which offers logging.
ConfigBuilder alice_alone(const Secret& alpha, const Secret& alice) {
  return ConfigBuilder()
      .computer("alpha", alpha)
      .client("alice", alice, R"({ alpha = ["echo"] })", "alpha");
}

std::unique_ptr<FakeComputer> attach_logging(const SwitchboardProcess& sb, const Secret& alpha,
                                             const Secret& alice) {
  FakeComputerOptions options;
  options.offers_logging = true;
  return attach_ready(sb, alpha, "alpha", alice.secret, options);
}

TEST_F(Fidelity, WithOneClientLoggingReachesItsStream) {
  SwitchboardProcess sb(alice_alone(alpha_, alice_));
  auto fake = attach_logging(sb, alpha_, alice_);
  ASSERT_TRUE(fake);
  const json init = post_mcp(sb.port(), kPath, alice_.secret, initialize_request(1)).json();
  EXPECT_TRUE(init["result"]["capabilities"].contains("logging")) << init;
  post_mcp(sb.port(), kPath, alice_.secret, rpc(2, "logging/setLevel", json{{"level", "debug"}}));
  EXPECT_TRUE(fake->wait_for_requests("logging/setLevel", 1));

  OpenCall call(sb.port(), post(kPath, alice_.secret, tool_call(3, "echo", hold(1))));
  const json seen = computer_call(*fake, hold(1));
  ASSERT_FALSE(seen.is_null());
  const json line{{"jsonrpc", "2.0"},
                  {"method", "notifications/message"},
                  {"params", {{"level", "info"}, {"data", "working"}}}};
  fake->send_text(line.dump());
  EXPECT_EQ(call.next(), line);
  fake->answer(id_of(seen), text_result("done"));
  EXPECT_EQ(result_text(call.next()), "done");
  EXPECT_TRUE(call.next().is_null());
}

// 2026-07-28 has no logging/setLevel: a request names the level it wants in `_meta`, and
// gets no log message without one; the computer, of the handshake era, is set to that
// level (docs/protocol.md, "Eras").
TEST_F(Fidelity, A2026RequestGetsOnlyTheLogMessagesItsMetaLevelAsksFor) {
  SwitchboardProcess sb(alice_alone(alpha_, alice_));
  auto fake = attach_logging(sb, alpha_, alice_);
  ASSERT_TRUE(fake);
  const auto log_line = [](const std::string& level) {
    return json{{"jsonrpc", "2.0"},
                {"method", "notifications/message"},
                {"params", {{"level", level}, {"data", level}}}};
  };
  const auto call_logging = [&](int n, const json& meta) {
    json params{{"name", "echo"}, {"arguments", hold(n)}, {"_meta", kStatelessMeta}};
    params["_meta"].update(meta);
    OpenCall call(sb.port(), stateless(alice_.secret, n, "tools/call", params, "echo"));
    const json seen = computer_call(*fake, hold(n));
    EXPECT_FALSE(seen.is_null());
    for (const char* level : {"info", "error"}) fake->send_text(log_line(level).dump());
    fake->answer(id_of(seen), text_result("done"));
    const HttpResponse answer = call.rest();
    EXPECT_EQ(result_text(answer.final_message()), "done") << answer.body;
    return answer.body;
  };
  const std::string warned = call_logging(1, {{"io.modelcontextprotocol/logLevel", "warning"}});
  EXPECT_NE(warned.find(R"("data":"error")"), std::string::npos) << warned;
  EXPECT_EQ(warned.find(R"("data":"info")"), std::string::npos) << warned;
  const std::string silent = call_logging(2, json::object());
  EXPECT_EQ(silent.find("notifications/message"), std::string::npos) << silent;

  // The handshake-era computer keeps one level: it is set, before the request, to the one a
  // request names when that differs from the one set last.
  call_logging(3, {{"io.modelcontextprotocol/logLevel", "warning"}});
  const std::string debug = call_logging(4, {{"io.modelcontextprotocol/logLevel", "debug"}});
  EXPECT_NE(debug.find(R"("data":"info")"), std::string::npos) << debug;
  const auto levels = fake->requests("logging/setLevel");
  ASSERT_EQ(levels.size(), 2u);
  EXPECT_EQ(levels[0]["params"], (json{{"level", "warning"}}));
  EXPECT_EQ(levels[1]["params"], (json{{"level", "debug"}}));
}

}  // namespace
}  // namespace sbtest
