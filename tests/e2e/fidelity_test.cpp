// End to end: full-fidelity MCP through the relay (docs/protocol.md). Progress reaches its
// own caller with the caller's token and turns the reply into an event stream; progress
// restarts a call's timeout and max_total_secs caps it; every way a call ends early tells
// the computer (notifications/cancelled with its id) and frees the shares at once; session
// ids scope cancellation and are never a gate; requests from the computer reach the one
// caller that can answer them; the client capabilities the switchboard declares; protocol
// revisions; Origin and CORS; and frames that are not exactly one message.
#include <gtest/gtest.h>

#include <strings.h>
#include <regex>

#include "tests/e2e/e2e_helpers.hpp"

namespace sbtest {
namespace {

constexpr int kRequestCancelled = -32800;
const std::string kPath = "/mcp/alpha";

const Headers kAcceptBoth{{"Content-Type", "application/json"},
                          {"Accept", "application/json, text/event-stream"}};
const Headers kAcceptJsonOnly{{"Content-Type", "application/json"}, {"Accept", "application/json"}};

Headers with(Headers headers, std::string name, std::string value) {
  headers.emplace_back(std::move(name), std::move(value));
  return headers;
}

// A POST of `body` to `path` with the token and exactly `headers` besides.
HttpRequest post(const std::string& path, const std::string& token, const json& body,
                 const Headers& headers = kAcceptBoth) {
  return HttpRequest{
      .method = "POST", .target = path, .body = body.dump(), .token = token, .headers = headers};
}

// A tools/call whose params carry `_meta.progressToken`.
json call_with_token(const json& id, const std::string& tool, const json& arguments,
                     const json& progress_token) {
  return rpc(id, "tools/call",
             json{{"name", tool},
                  {"arguments", arguments},
                  {"_meta", {{"progressToken", progress_token}}}});
}

json progress_arguments(int every_ms, int count, bool then_hold = false) {
  json arguments{{"mode", "progress"}, {"every_ms", every_ms}, {"count", count}};
  if (then_hold) arguments["then"] = "hold";
  return arguments;
}

json progress_notification(const json& token, int progress, const std::string& message) {
  return json{
      {"jsonrpc", "2.0"},
      {"method", "notifications/progress"},
      {"params",
       {{"progressToken", token}, {"progress", progress}, {"total", 3}, {"message", message}}}};
}

json cancel_notification(const json& request_id, std::optional<std::string> reason = {}) {
  json params{{"requestId", request_id}};
  if (reason) params["reason"] = *reason;
  return json{{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", params}};
}

json initialize_request(const json& id, std::optional<std::string> version = "2025-06-18") {
  json params{{"capabilities", json::object()},
              {"clientInfo", {{"name", "fidelity-test"}, {"version", "0.0.0"}}}};
  if (version) params["protocolVersion"] = *version;
  return rpc(id, "initialize", params);
}

json text_result(const std::string& text) {
  return json{
      {"result",
       {{"content", json::array({{{"type", "text"}, {"text", text}}})}, {"isError", false}}}};
}

bool has_id(const json& frame, const json& id) {
  return frame.is_object() && frame.contains("id") && frame["id"] == id;
}

bool is_cancel(const json& frame) {
  return frame.is_object() && frame.value("method", "") == "notifications/cancelled";
}

// Every notifications/cancelled the computer has received.
std::vector<json> cancels(const FakeComputer& fake) {
  std::vector<json> out;
  for (const auto& frame : fake.frames()) {
    if (is_cancel(frame)) out.push_back(frame);
  }
  return out;
}

// The notifications/cancelled the computer received for its request `id` (null if none
// came in time).
json wait_cancel(const FakeComputer& fake, const json& id) {
  return fake.wait_for_frame([&](const json& frame) {
    return is_cancel(frame) && frame.contains("params") && frame["params"].is_object() &&
           frame["params"].value("requestId", json()) == id;
  });
}

// The cancellation the contract prescribes for the computer's request `id`.
json expected_cancel(const json& id, const std::string& reason) {
  return json{{"jsonrpc", "2.0"},
              {"method", "notifications/cancelled"},
              {"params", {{"requestId", id}, {"reason", reason}}}};
}

// The tools/call the computer received with these arguments; fails the test if none came.
json computer_call(const FakeComputer& fake, const json& arguments) {
  const json found = fake.wait_for_frame([&](const json& frame) {
    return frame.is_object() && frame.value("method", "") == "tools/call" &&
           frame.contains("params") && frame["params"].is_object() &&
           frame["params"].value("arguments", json()) == arguments;
  });
  EXPECT_FALSE(found.is_null()) << "the computer never received a call with " << arguments;
  return found;
}

std::uint64_t id_of(const json& request) {
  return request.at("id").get<std::uint64_t>();
}

json token_of(const json& request) {
  return request.at("params").at("_meta").at("progressToken");
}

bool same_text(std::string_view a, std::string_view b) {
  return a.size() == b.size() && ::strncasecmp(a.data(), b.data(), a.size()) == 0;
}

// Whether a comma-separated header (any line of that name) lists `item`, ignoring case.
bool header_lists(const HttpResponse& response, std::string_view name, std::string_view item) {
  for (const auto& [key, value] : response.headers) {
    if (!same_text(key, name)) continue;
    std::size_t start = 0;
    while (start <= value.size()) {
      std::size_t end = value.find(',', start);
      if (end == std::string::npos) end = value.size();
      std::string_view entry = std::string_view(value).substr(start, end - start);
      while (!entry.empty() && entry.front() == ' ') entry.remove_prefix(1);
      while (!entry.empty() && entry.back() == ' ') entry.remove_suffix(1);
      if (same_text(entry, item)) return true;
      start = end + 1;
    }
  }
  return false;
}

void expect_event_stream_head(const HttpResponse& head) {
  EXPECT_EQ(head.status, 200);
  EXPECT_TRUE(head.is_event_stream()) << head.header("Content-Type").value_or("(no Content-Type)");
  EXPECT_EQ(head.header("Cache-Control"), "no-cache");
  EXPECT_EQ(head.header("X-Accel-Buffering"), "no");
  EXPECT_EQ(head.header("Transfer-Encoding"), "chunked");
  EXPECT_FALSE(head.has_header("Content-Length"));
}

void expect_plain_json(const HttpResponse& response) {
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.header("Content-Type"), "application/json") << response.body;
  EXPECT_FALSE(response.json().is_discarded()) << response.body;
}

// A request sent on its own kept-alive connection, whose answer the test reads as it
// arrives (the head, then message by message) while it does other things meanwhile.
class OpenCall {
 public:
  OpenCall(int port, const HttpRequest& request) : connection_(port) { connection_.send(request); }
  HttpConnection& connection() { return connection_; }
  // The head of the answer (read on first use).
  const HttpResponse& head() {
    if (!head_) head_ = connection_.read_head(kDefaultWait);
    return *head_;
  }
  // The next message of the event stream; null once the stream has ended.
  json next() {
    head();
    auto event = connection_.next_event(kDefaultWait);
    if (!event) return nullptr;
    events_.push_back(*event);
    return event->json();
  }
  // The whole answer, reading what is left of it.
  HttpResponse rest() {
    head();
    return connection_.read_rest(kDefaultWait);
  }
  const std::vector<SseEvent>& events() const { return events_; }

 private:
  HttpConnection connection_;
  std::optional<HttpResponse> head_;
  std::vector<SseEvent> events_;
};

class Fidelity : public AlphaTest {
 protected:
  Secret bob_ = new_secret();

  // AlphaTest's, and bob (echo).
  ConfigBuilder config(std::optional<int> alpha_max = {}) const {
    return AlphaTest::config(alpha_max).client("bob", bob_, R"({ alpha = ["echo"] })");
  }

  struct HeldEchoOptions {
    json id = 1;  // of alice's call
    Headers headers = kAcceptBoth;
    std::optional<int> alpha_max;
  };

  // A switchboard, computer alpha ready, and alice's `echo` call with arguments hold(1) in
  // flight: seen by the computer, not answered yet.
  struct HeldEcho {
    explicit HeldEcho(const Fidelity& test) : HeldEcho(test, HeldEchoOptions{}) {}
    HeldEcho(const Fidelity& test, const HeldEchoOptions& options)
        : sb(test.config(options.alpha_max)),
          fake(test.attach_alpha(sb)),
          call(sb.port(), post(kPath, test.alice_.secret, tool_call(options.id, "echo", hold(1)),
                               options.headers)),
          seen(fake ? computer_call(*fake, hold(1)) : json()) {}
    bool ready() const { return fake && !seen.is_null(); }

    // The computer echoes; alice's reply is that echo, as plain JSON.
    void answer_and_expect_plain_echo() {
      fake->answer_echo(seen);
      const HttpResponse reply = call.rest();
      expect_plain_json(reply);
      EXPECT_EQ(echoed(reply.json()), hold(1));
    }

    SwitchboardProcess sb;
    std::unique_ptr<FakeComputer> fake;
    OpenCall call;
    json seen;  // the call as the computer received it
  };

  // After a call ended early on a computer with max_inflight = 1 (and so a one-call share
  // for each caller): the next call goes through at once and is answered by the computer.
  void expect_shares_free(const SwitchboardProcess& sb, const FakeComputer& fake) {
    const std::size_t before = fake.calls().size();
    const json next = call_tool(sb.port(), kPath, alice_.secret, "echo", json{{"next", true}}, 99);
    EXPECT_EQ(error_code(next), 0) << "the share was not given back: " << next;
    EXPECT_EQ(echoed(next), (json{{"next", true}})) << next;
    EXPECT_EQ(fake.calls().size(), before + 1);
  }
};

// ---------------------------------------------------------------------------------------
// Progress and the event-stream reply (docs/protocol.md, "Progress and event streams")

TEST_F(Fidelity, ProgressReachesItsCallerWithTheCallersOwnTokenOnAnEventStream) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  OpenCall call(sb.port(),
                post(kPath, alice_.secret, call_with_token("c-1", "echo", hold(1), "alice-job")));
  const json seen = computer_call(*fake, hold(1));
  ASSERT_FALSE(seen.is_null());
  const json token = token_of(seen);
  EXPECT_TRUE(token.is_number_integer())
      << "the computer must see the switchboard's token: " << token;
  EXPECT_EQ(seen["params"]["name"], "echo");

  fake->send_text(progress_notification(token, 1, "warming up").dump());
  expect_event_stream_head(call.head());
  EXPECT_EQ(call.next(), (json{{"jsonrpc", "2.0"},
                               {"method", "notifications/progress"},
                               {"params",
                                {{"progressToken", "alice-job"},
                                 {"progress", 1},
                                 {"total", 3},
                                 {"message", "warming up"}}}}));
  fake->send_text(progress_notification(token, 2, "half way").dump());
  const json second = call.next();
  EXPECT_EQ(second["params"]["progressToken"], "alice-job");
  EXPECT_EQ(second["params"]["progress"], 2);

  // The final response is the last event, then the body ends.
  fake->answer(id_of(seen), text_result("done"));
  const json reply = call.next();
  EXPECT_EQ(reply["id"], "c-1");
  EXPECT_EQ(result_text(reply), "done");
  EXPECT_TRUE(call.next().is_null()) << "the stream went on after the final response";

  // Each message is exactly `event: message` and one `data:` line of JSON.
  const HttpResponse whole = call.rest();
  std::string expected;
  for (const auto& event : call.events()) {
    EXPECT_EQ(event.data.find('\n'), std::string::npos) << event.data;
    expected += "event: message\ndata: " + event.data + "\n\n";
  }
  EXPECT_EQ(whole.body, expected);

  // The connection stays alive: a second request on it is answered.
  const auto again = call.connection().request(post(kPath, alice_.secret, rpc(2, "ping")));
  EXPECT_EQ(again.status, 200);
  EXPECT_EQ(again.json()["id"], 2);
  EXPECT_TRUE(sb.audit().wait_for(
      "call", fields_equal({{"principal", "alice"}, {"tool", "echo"}, {"outcome", "ok"}})));
}

TEST_F(Fidelity, TwoCallersUsingTheSameProgressTokenEachSeeOnlyTheirOwnProgress) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  // Same id, same token, same tool: only the callers differ.
  OpenCall alices(sb.port(), post(kPath, alice_.secret, call_with_token(1, "echo", hold(1), "t")));
  OpenCall bobs(sb.port(), post(kPath, bob_.secret, call_with_token(1, "echo", hold(2), "t")));
  const json alice_seen = computer_call(*fake, hold(1));
  const json bob_seen = computer_call(*fake, hold(2));
  ASSERT_FALSE(alice_seen.is_null() || bob_seen.is_null());
  EXPECT_NE(token_of(alice_seen), token_of(bob_seen)) << "one token for two calls on one socket";

  fake->send_text(progress_notification(token_of(alice_seen), 1, "for alice").dump());
  fake->send_text(progress_notification(token_of(bob_seen), 2, "for bob").dump());
  const json alice_progress = alices.next();
  EXPECT_EQ(alice_progress["params"]["progressToken"], "t");
  EXPECT_EQ(alice_progress["params"]["message"], "for alice");
  const json bob_progress = bobs.next();
  EXPECT_EQ(bob_progress["params"]["progressToken"], "t");
  EXPECT_EQ(bob_progress["params"]["message"], "for bob");

  fake->answer_echo(alice_seen);
  fake->answer_echo(bob_seen);
  EXPECT_EQ(echoed(alices.next()), hold(1));
  EXPECT_EQ(echoed(bobs.next()), hold(2));
  EXPECT_TRUE(alices.next().is_null());
  EXPECT_TRUE(bobs.next().is_null());
  // Each stream held its own progress and its own reply, nothing else.
  EXPECT_EQ(alices.events().size(), 2u);
  EXPECT_EQ(bobs.events().size(), 2u);
  for (const auto& event : alices.events())
    EXPECT_EQ(event.data.find("for bob"), std::string::npos) << event.data;
  for (const auto& event : bobs.events())
    EXPECT_EQ(event.data.find("for alice"), std::string::npos) << event.data;
}

TEST_F(Fidelity, ACallerThatAcceptsOnlyJsonGetsPlainJsonAndNoProgress) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  OpenCall call(sb.port(), post(kPath, alice_.secret, call_with_token(4, "echo", hold(1), "tok"),
                                kAcceptJsonOnly));
  const json seen = computer_call(*fake, hold(1));
  ASSERT_FALSE(seen.is_null());
  fake->send_text(progress_notification(token_of(seen), 1, "nobody listens").dump());
  fake->send_text(progress_notification(token_of(seen), 2, "still nobody").dump());
  fake->answer_echo(seen);
  const HttpResponse response = call.rest();
  expect_plain_json(response);
  EXPECT_EQ(response.json()["id"], 4);
  EXPECT_EQ(echoed(response.json()), hold(1));
  EXPECT_EQ(response.body.find("notifications/progress"), std::string::npos) << response.body;
}

TEST_F(Fidelity, ACallWithNothingToStreamIsPlainJsonEvenWhenTheCallerAcceptsEventStreams) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  const auto response = http(
      sb.port(), post(kPath, alice_.secret, call_with_token(5, "echo", json{{"n", 5}}, "quiet")));
  expect_plain_json(response);
  EXPECT_EQ(response.json()["id"], 5);
  EXPECT_EQ(echoed(response.json()), (json{{"n", 5}}));
  const auto listed = http(sb.port(), post(kPath, alice_.secret, rpc(6, "tools/list")));
  expect_plain_json(listed);
}

// ---------------------------------------------------------------------------------------
// Timeouts (docs/protocol.md, "Progress and event streams")

TEST_F(Fidelity, ProgressRestartsTheCallsTimeout) {
  // A 3 s timeout; the computer reports progress every second for five seconds, then
  // answers. (Two seconds of slack per gap, for a loaded machine.)
  SwitchboardProcess sb(config().timeouts(3, 5, {}));
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  const json arguments = progress_arguments(1000, 5);
  OpenCall call(sb.port(),
                post(kPath, alice_.secret, call_with_token(1, "echo", arguments, "long")));
  expect_event_stream_head(call.head());
  const auto messages = sse_messages(call.rest().body);
  ASSERT_EQ(messages.size(), 6u) << "five progress notifications and the reply";
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(messages[i]["method"], "notifications/progress");
    EXPECT_EQ(messages[i]["params"]["progressToken"], "long");
    EXPECT_EQ(messages[i]["params"]["progress"], i + 1);
  }
  EXPECT_EQ(error_code(messages[5]), 0) << messages[5];
  EXPECT_EQ(messages[5]["id"], 1);
  EXPECT_EQ(echoed(messages[5]), arguments);
  EXPECT_TRUE(
      sb.audit().wait_for("call", fields_equal({{"principal", "alice"}, {"outcome", "ok"}})));
  EXPECT_TRUE(cancels(*fake).empty());
}

TEST_F(Fidelity, ProgressKeepsACallAliveEvenForACallerThatTakesOnlyJson) {
  // The caller sees none of the progress, yet the call outlives its 3 s timeout and the
  // supervisor's backstop (2 s later) alike.
  SwitchboardProcess sb(config().timeouts(3, 5, {}));
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  const json arguments = progress_arguments(1000, 6);
  OpenCall call(sb.port(), post(kPath, alice_.secret, call_with_token(1, "echo", arguments, "json"),
                                kAcceptJsonOnly));
  const HttpResponse response = call.rest();
  expect_plain_json(response);
  EXPECT_EQ(error_code(response.json()), 0) << response.body;
  EXPECT_EQ(echoed(response.json()), arguments);
  EXPECT_TRUE(cancels(*fake).empty());
}

TEST_F(Fidelity, MaxTotalSecsEndsACallWhateverItsProgress) {
  // Progress every second for a minute would keep a 2 s timeout alive; the 3 s cap does not
  // care. (The bounded read below gives up long before the minute.)
  SwitchboardProcess sb(config().timeouts(2, 5, {}).max_total_secs(3));
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  const json arguments = progress_arguments(1000, 60, /*then_hold=*/true);
  OpenCall call(sb.port(),
                post(kPath, alice_.secret, call_with_token(8, "echo", arguments, "cap")));
  expect_event_stream_head(call.head());
  const auto messages = sse_messages(call.rest().body);
  ASSERT_FALSE(messages.empty());
  const json& last = messages.back();
  EXPECT_EQ(error_code(last), kTimeout) << last;
  EXPECT_EQ(last["id"], 8);
  for (std::size_t i = 0; i + 1 < messages.size(); ++i)
    EXPECT_EQ(messages[i]["method"], "notifications/progress") << messages[i];

  const json seen = computer_call(*fake, arguments);
  ASSERT_FALSE(seen.is_null());
  EXPECT_EQ(wait_cancel(*fake, seen["id"]), expected_cancel(seen["id"], "timed out"));
  const auto line = sb.audit().wait_for("call", fields_equal({{"principal", "alice"}}));
  ASSERT_TRUE(line);
  EXPECT_EQ((*line)["outcome"], "timeout");
  EXPECT_EQ((*line)["error_code"], kTimeout);
}

// ---------------------------------------------------------------------------------------
// Cancellation (docs/protocol.md, "Cancellation"). alpha takes one call at a time, so a share not
// given back at once shows as -32002 on the next call.

TEST_F(Fidelity, ACallersCancelReachesTheComputerWithItsIdAndFreesTheShares) {
  HeldEcho held(*this, {.id = "job-1", .alpha_max = 1});
  ASSERT_TRUE(held.ready());

  const auto accepted = http(
      held.sb.port(), post(kPath, alice_.secret, cancel_notification("job-1", "user hit stop")));
  EXPECT_EQ(accepted.status, 202);
  EXPECT_EQ(wait_cancel(*held.fake, held.seen["id"]),
            expected_cancel(held.seen["id"], "user hit stop"));

  const json answer = held.call.rest().final_message();
  EXPECT_EQ(error_code(answer), kRequestCancelled) << answer;
  EXPECT_EQ(answer["id"], "job-1");
  const auto line = held.sb.audit().wait_for("call", fields_equal({{"outcome", "cancelled"}}));
  ASSERT_TRUE(line);
  EXPECT_EQ((*line)["principal"], "alice");
  EXPECT_EQ((*line)["computer"], "alpha");

  expect_shares_free(held.sb, *held.fake);
  // A late answer to the cancelled call goes nowhere; the session is unharmed.
  held.fake->answer_echo(held.seen);
  EXPECT_EQ(echoed(call_tool(held.sb.port(), kPath, bob_.secret, "echo", json{{"n", 3}}, "b")),
            (json{{"n", 3}}));
  EXPECT_EQ(held.sb.audit().count("call", fields_equal({{"outcome", "cancelled"}})), 1u);
}

TEST_F(Fidelity, ACancelWithoutAReasonIsSentAsCancelledByTheCaller) {
  HeldEcho held(*this, {.id = 42, .alpha_max = 1});
  ASSERT_TRUE(held.ready());
  EXPECT_EQ(http(held.sb.port(), post(kPath, alice_.secret, cancel_notification(42))).status, 202);
  EXPECT_EQ(wait_cancel(*held.fake, held.seen["id"]),
            expected_cancel(held.seen["id"], "cancelled by the caller"));
  EXPECT_EQ(error_code(held.call.rest().final_message()), kRequestCancelled);
  expect_shares_free(held.sb, *held.fake);
}

TEST_F(Fidelity, ACallerHangingUpMidCallCancelsItAtTheComputer) {
  SwitchboardProcess sb(config(/*alpha_max=*/1));
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  HttpConnection connection(sb.port());
  connection.send(post(kPath, alice_.secret, tool_call(1, "echo", hold(1))));
  const json seen = computer_call(*fake, hold(1));
  ASSERT_FALSE(seen.is_null());

  connection.close();
  EXPECT_EQ(wait_cancel(*fake, seen["id"]), expected_cancel(seen["id"], "caller disconnected"));
  const auto line = sb.audit().wait_for("call", fields_equal({{"principal", "alice"}}));
  ASSERT_TRUE(line);
  EXPECT_EQ((*line)["outcome"], "abandoned");
  expect_shares_free(sb, *fake);
}

TEST_F(Fidelity, ADeadlinePassingCancelsTheCallAtTheComputer) {
  SwitchboardProcess sb(config(/*alpha_max=*/1));  // slow: 1 s
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  const json reply = call_tool(sb.port(), kPath, alice_.secret, "slow", hold(1), "late");
  EXPECT_EQ(error_code(reply), kTimeout) << reply;
  EXPECT_EQ(reply["id"], "late");
  const json seen = computer_call(*fake, hold(1));
  ASSERT_FALSE(seen.is_null());
  EXPECT_EQ(wait_cancel(*fake, seen["id"]), expected_cancel(seen["id"], "timed out"));
  const auto line = sb.audit().wait_for("call", fields_equal({{"tool", "slow"}}));
  ASSERT_TRUE(line);
  EXPECT_EQ((*line)["outcome"], "timeout");
  expect_shares_free(sb, *fake);
}

TEST_F(Fidelity, ACancelNamingAnotherClientsCallCancelsNothing) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  OpenCall alices(sb.port(), post(kPath, alice_.secret, tool_call(7, "echo", hold(1))));
  OpenCall bobs(sb.port(), post(kPath, bob_.secret, tool_call(8, "echo", hold(2))));
  const json alice_seen = computer_call(*fake, hold(1));
  const json bob_seen = computer_call(*fake, hold(2));
  ASSERT_FALSE(alice_seen.is_null() || bob_seen.is_null());

  // bob names alice's id: he has no call 7.
  EXPECT_EQ(http(sb.port(), post(kPath, bob_.secret, cancel_notification(7, "not yours"))).status,
            202);
  // A later call of bob's is the barrier: a cancel sent before it would have reached the
  // computer first.
  EXPECT_EQ(echoed(call_tool(sb.port(), kPath, bob_.secret, "echo", json{{"n", 9}}, 9)),
            (json{{"n", 9}}));
  EXPECT_TRUE(cancels(*fake).empty()) << cancels(*fake).front();

  fake->answer_echo(alice_seen);
  fake->answer_echo(bob_seen);
  const json alice_reply = alices.rest().final_message();
  EXPECT_EQ(alice_reply["id"], 7);
  EXPECT_EQ(echoed(alice_reply), hold(1));
  const json bob_reply = bobs.rest().final_message();
  EXPECT_EQ(bob_reply["id"], 8);
  EXPECT_EQ(echoed(bob_reply), hold(2));
  EXPECT_EQ(sb.audit().count("call", fields_equal({{"outcome", "cancelled"}})), 0u);
}

// ---------------------------------------------------------------------------------------
// Sessions (docs/protocol.md, "Sessions")

TEST_F(Fidelity, InitializeGivesA32HexSessionIdAndUnknownSessionIdsAreServed) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  const auto first = http(sb.port(), post(kPath, alice_.secret, initialize_request(1)));
  const auto second = http(sb.port(), post(kPath, alice_.secret, initialize_request(2)));
  ASSERT_EQ(first.status, 200);
  const auto session = first.header("Mcp-Session-Id");
  ASSERT_TRUE(session) << "initialize carries no Mcp-Session-Id";
  EXPECT_TRUE(std::regex_match(*session, std::regex("[0-9a-fA-F]{32}"))) << *session;
  EXPECT_NE(second.header("Mcp-Session-Id"), session) << "two initializes, one session";

  // A session the switchboard never issued (say, from before a restart) is no gate.
  const Headers unknown = with(kAcceptBoth, "Mcp-Session-Id", "0123456789abcdef0123456789abcdef");
  const auto call =
      http(sb.port(), post(kPath, alice_.secret, tool_call(3, "echo", json{{"n", 3}}), unknown));
  EXPECT_EQ(call.status, 200) << call.body;
  EXPECT_EQ(echoed(call.final_message()), (json{{"n", 3}}));
  const auto listed = http(sb.port(), post(kPath, alice_.secret, rpc(4, "tools/list"), unknown));
  EXPECT_EQ(listed.status, 200) << listed.body;
  EXPECT_EQ(tool_names(listed.final_message()),
            (std::vector<std::string>{"echo", "slow", "vm_status"}));
  const auto pinged = http(sb.port(), post(kPath, alice_.secret, rpc(5, "ping"), unknown));
  EXPECT_EQ(pinged.status, 200) << pinged.body;
  const auto notified = http(
      sb.port(), post(kPath, alice_.secret,
                      json{{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}, unknown));
  EXPECT_EQ(notified.status, 202) << notified.body;
  // And one it did issue works as well.
  const auto in_session = http(sb.port(), post(kPath, alice_.secret, rpc(6, "ping"),
                                               with(kAcceptBoth, "Mcp-Session-Id", *session)));
  EXPECT_EQ(in_session.status, 200) << in_session.body;
}

TEST_F(Fidelity, ACancelCarryingASessionMatchesOnlyCallsMadeInThatSession) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  const auto s1 =
      http(sb.port(), post(kPath, alice_.secret, initialize_request(1))).header("Mcp-Session-Id");
  const auto s2 =
      http(sb.port(), post(kPath, alice_.secret, initialize_request(2))).header("Mcp-Session-Id");
  ASSERT_TRUE(s1 && s2);
  ASSERT_NE(*s1, *s2);
  const Headers in_s1 = with(kAcceptBoth, "Mcp-Session-Id", *s1);
  const Headers in_s2 = with(kAcceptBoth, "Mcp-Session-Id", *s2);

  OpenCall call(sb.port(), post(kPath, alice_.secret, tool_call(5, "echo", hold(1)), in_s1));
  const json seen = computer_call(*fake, hold(1));
  ASSERT_FALSE(seen.is_null());

  // Same client, same id, another session: nothing.
  EXPECT_EQ(http(sb.port(), post(kPath, alice_.secret, cancel_notification(5, "other tab"), in_s2))
                .status,
            202);
  EXPECT_EQ(echoed(call_tool(sb.port(), kPath, alice_.secret, "echo", json{{"n", 6}}, 6)),
            (json{{"n", 6}}));
  EXPECT_TRUE(cancels(*fake).empty()) << cancels(*fake).front();

  // The call's own session: cancelled.
  EXPECT_EQ(
      http(sb.port(), post(kPath, alice_.secret, cancel_notification(5, "this tab"), in_s1)).status,
      202);
  EXPECT_EQ(wait_cancel(*fake, seen["id"]), expected_cancel(seen["id"], "this tab"));
  EXPECT_EQ(error_code(call.rest().final_message()), kRequestCancelled);
  EXPECT_EQ(cancels(*fake).size(), 1u);
}

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

TEST_F(Fidelity, WithOneClientLoggingReachesItsStream) {
  SwitchboardProcess sb(ConfigBuilder()
                            .computer("alpha", alpha_)
                            .client("alice", alice_, R"({ alpha = ["echo"] })", "alpha"));
  FakeComputerOptions options;
  options.offers_logging = true;
  auto fake = attach_ready(sb, alpha_, "alpha", alice_.secret, options);
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
