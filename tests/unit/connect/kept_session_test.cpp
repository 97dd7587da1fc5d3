// The kept session (connect/kept_session.hpp): one MCP session with the server across many
// attaches, each message routed as the switchboard and the server would have it.
#include "connect/kept_session.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace sb::connect {
namespace {

using json = nlohmann::json;

// The one message `routed` sends to `link`, if any.
std::optional<std::string> to_link(const Routed& routed, LinkId link = 0) {
  std::optional<std::string> found;
  for (const auto& [to, message] : routed.to_links) {
    if (to != link) continue;
    EXPECT_FALSE(found) << "two messages to link " << link;
    found = message;
  }
  return found;
}

json parsed(const std::optional<std::string>& text) {
  EXPECT_TRUE(text.has_value());
  return text ? json::parse(*text) : json();
}

constexpr std::string_view kInitialize =
    R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18"}})";
constexpr std::string_view kInitialized =
    R"({"jsonrpc":"2.0","method":"notifications/initialized"})";

// An attached session whose server has answered the first initialize.
KeptSession initialized_session() {
  KeptSession session;
  session.attach(0);
  const json to_server = parsed(session.from_link(0, kInitialize).to_server);
  const std::string answer = R"({"jsonrpc":"2.0","id":)" + to_server["id"].dump() +
                             R"(,"result":{"serverInfo":{"name":"s"}}})";
  EXPECT_EQ(parsed(to_link(session.from_server(answer)))["id"], 0);
  EXPECT_TRUE(session.from_link(0, kInitialized).to_server);
  return session;
}

TEST(KeptSession, TheFirstInitializeGoesToTheServerALaterOneIsAnsweredFromIt) {
  KeptSession session = initialized_session();
  EXPECT_TRUE(session.initialized());
  session.detach(0);
  session.attach(0);
  const Routed again =
      session.from_link(0, R"({"jsonrpc":"2.0","id":"x","method":"initialize","params":{}})");
  EXPECT_FALSE(again.to_server);
  EXPECT_EQ(parsed(to_link(again)),
            (json{{"jsonrpc", "2.0"}, {"id", "x"}, {"result", {{"serverInfo", {{"name", "s"}}}}}}));
  const Routed initialized = session.from_link(0, kInitialized);
  EXPECT_FALSE(initialized.to_server);
  EXPECT_FALSE(to_link(initialized));
  EXPECT_TRUE(initialized.dropped.empty());
}

TEST(KeptSession, AFailedInitializeIsNotKept) {
  KeptSession session;
  session.attach(0);
  const json to_server = parsed(session.from_link(0, kInitialize).to_server);
  session.from_server(R"({"jsonrpc":"2.0","id":)" + to_server["id"].dump() +
                      R"(,"error":{"code":-32603,"message":"no"}})");
  EXPECT_FALSE(session.initialized());
  EXPECT_TRUE(session.from_link(0, kInitialize).to_server);
}

TEST(KeptSession, IdsAndProgressTokensTowardTheServerAreItsOwnAndComeBackAsTheLinksWere) {
  KeptSession session = initialized_session();
  const std::string call =
      R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"t","_meta":{"progressToken":"tok"}}})";
  const json first = parsed(session.from_link(0, call).to_server);
  EXPECT_EQ(first["params"]["_meta"]["progressToken"], first["id"]);
  EXPECT_EQ(first["params"]["name"], "t");
  const std::string ours = first["id"].dump();

  const json progress = parsed(to_link(session.from_server(
      R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":)" + ours +
      R"(,"progress":1}})")));
  EXPECT_EQ(progress["params"]["progressToken"], "tok");
  const json reply =
      parsed(to_link(session.from_server(R"({"jsonrpc":"2.0","id":)" + ours + R"(,"result":{}})")));
  EXPECT_EQ(reply["id"], 7);

  // The same link id again, as a new attach would send it: a new id toward the server.
  const json second = parsed(session.from_link(0, call).to_server);
  EXPECT_NE(second["id"], first["id"]);
}

TEST(KeptSession, ALostAttachsCallsAreCancelledAndTheirLateRepliesAndProgressReachNoOne) {
  KeptSession session = initialized_session();
  const json call = parsed(
      session
          .from_link(
              0,
              R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"_meta":{"progressToken":1}}})")
          .to_server);
  const std::string ours = call["id"].dump();
  const auto told = session.detach(0);
  ASSERT_EQ(told.size(), 1u);
  const json cancel = json::parse(told[0]);
  EXPECT_EQ(cancel["method"], "notifications/cancelled");
  EXPECT_EQ(cancel["params"]["requestId"], call["id"]);

  session.attach(0);
  const Routed progress = session.from_server(
      R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":)" + ours +
      R"(,"progress":1}})");
  EXPECT_FALSE(to_link(progress));
  const Routed late = session.from_server(R"({"jsonrpc":"2.0","id":)" + ours + R"(,"result":{}})");
  EXPECT_FALSE(to_link(late));
  EXPECT_FALSE(late.to_server);
}

TEST(KeptSession, ACancellationNamesTheServersIdAndOneForNothingInFlightIsDropped) {
  KeptSession session = initialized_session();
  const json call =
      parsed(session.from_link(0, R"({"jsonrpc":"2.0","id":"c","method":"tools/call","params":{}})")
                 .to_server);
  const json cancel = parsed(
      session
          .from_link(
              0,
              R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c","reason":"r"}})")
          .to_server);
  EXPECT_EQ(cancel["params"]["requestId"], call["id"]);
  EXPECT_EQ(cancel["params"]["reason"], "r");
  const Routed unknown = session.from_link(
      0, R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"zz"}})");
  EXPECT_FALSE(unknown.to_server);
}

TEST(KeptSession, TheServersRequestsAreAnsweredWithAnErrorWhenNoAttachCanAnswerThem) {
  KeptSession session = initialized_session();
  const std::string ask = R"({"jsonrpc":"2.0","id":"s1","method":"roots/list"})";
  EXPECT_EQ(parsed(to_link(session.from_server(ask)))["id"], "s1");
  const auto told = session.detach(0);
  ASSERT_EQ(told.size(), 1u);
  EXPECT_EQ(json::parse(told[0])["id"], "s1");
  EXPECT_EQ(json::parse(told[0])["error"]["code"], -32603);

  const Routed detached =
      session.from_server(R"({"jsonrpc":"2.0","id":"s2","method":"roots/list"})");
  EXPECT_FALSE(to_link(detached));
  EXPECT_EQ(parsed(detached.to_server)["id"], "s2");

  // Answered while attached: nothing left to answer at the next detach.
  session.attach(0);
  session.from_server(ask);
  EXPECT_TRUE(
      session.from_link(0, R"({"jsonrpc":"2.0","id":"s1","result":{"roots":[]}})").to_server);
  EXPECT_TRUE(session.detach(0).empty());
}

TEST(KeptSession, ANotificationWhileDetachedIsDroppedAndOneWhileAttachedPassesAsItIs) {
  KeptSession session = initialized_session();
  const std::string note =
      R"({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}})";
  EXPECT_EQ(to_link(session.from_server(note)), note);
  session.detach(0);
  EXPECT_TRUE(session.from_server(note).to_links.empty());
}

TEST(KeptSession, WhatIsNotOneObjectIsNotRoutedFromTheLink) {
  KeptSession session = initialized_session();
  for (const std::string_view text : {"[1,2]", "{\"id\":1,\"id\":2,\"method\":\"x\"}", "{", "3"}) {
    const Routed routed = session.from_link(0, text);
    EXPECT_FALSE(routed.to_server) << text;
    EXPECT_FALSE(routed.dropped.empty()) << text;
  }
}

// Twins: links 0 and 1 attached to one server whose session link 0 initialized.
KeptSession twin_session() {
  KeptSession session = initialized_session();
  session.attach(1);
  EXPECT_TRUE(to_link(session.from_link(1, kInitialize), 1));
  return session;
}

std::string answer_to(const json& request, std::string_view result = "{}") {
  return R"({"jsonrpc":"2.0","id":)" + request["id"].dump() + R"(,"result":)" +
         std::string(result) + "}";
}

TEST(KeptSession, TwoLinksWithTheSameIdsGetIdsOfTheirOwnAndEachItsOwnAnswer) {
  KeptSession session = twin_session();
  const std::string call =
      R"({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"_meta":{"progressToken":9}}})";
  const json from_0 = parsed(session.from_link(0, call).to_server);
  const json from_1 = parsed(session.from_link(1, call).to_server);
  EXPECT_NE(from_0["id"], from_1["id"]);

  const Routed progress = session.from_server(
      R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":)" +
      from_1["id"].dump() + R"(,"progress":1}})");
  ASSERT_EQ(progress.to_links.size(), 1u);
  EXPECT_EQ(parsed(to_link(progress, 1))["params"]["progressToken"], 9);

  // A cancel from link 0 names link 0's call, though link 1 used the same id.
  const json cancel = parsed(
      session
          .from_link(
              0, R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}})")
          .to_server);
  EXPECT_EQ(cancel["params"]["requestId"], from_0["id"]);

  const Routed answer_1 = session.from_server(answer_to(from_1, R"({"n":1})"));
  ASSERT_EQ(answer_1.to_links.size(), 1u);
  EXPECT_EQ(parsed(to_link(answer_1, 1)),
            (json{{"jsonrpc", "2.0"}, {"id", 5}, {"result", {{"n", 1}}}}));
  // Link 0's call was cancelled: an answer the server sends anyway reaches no one.
  EXPECT_TRUE(session.from_server(answer_to(from_0)).to_links.empty());
}

TEST(KeptSession, AnInitializeWhileTheFirstIsOutWaitsForItsAnswer) {
  KeptSession session;
  session.attach(0);
  session.attach(1);
  const json first = parsed(session.from_link(0, kInitialize).to_server);
  const Routed waiting =
      session.from_link(1, R"({"jsonrpc":"2.0","id":"w","method":"initialize","params":{}})");
  EXPECT_FALSE(waiting.to_server);
  EXPECT_TRUE(waiting.to_links.empty());
  const Routed answered = session.from_server(answer_to(first, R"({"serverInfo":{}})"));
  ASSERT_EQ(answered.to_links.size(), 2u);
  EXPECT_EQ(parsed(to_link(answered, 0))["id"], 0);
  EXPECT_EQ(parsed(to_link(answered, 1))["id"], "w");
  EXPECT_EQ(parsed(to_link(answered, 1))["result"], json({{"serverInfo", json::object()}}));
  EXPECT_TRUE(session.initialized());
}

TEST(KeptSession, ANotificationOfNoCallReachesEveryAttachedLink) {
  KeptSession session = twin_session();
  const std::string changed = R"({"jsonrpc":"2.0","method":"notifications/tools/list_changed"})";
  const Routed both = session.from_server(changed);
  EXPECT_EQ(to_link(both, 0), changed);
  EXPECT_EQ(to_link(both, 1), changed);
  session.detach(0);
  const Routed one = session.from_server(changed);
  ASSERT_EQ(one.to_links.size(), 1u);
  EXPECT_EQ(to_link(one, 1), changed);
}

TEST(KeptSession, TheServersRequestGoesToTheOnlyLinkWithCallsAndOnlyItAnswers) {
  KeptSession session = twin_session();
  const json call =
      parsed(session.from_link(1, R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}})")
                 .to_server);
  const std::string ask = R"({"jsonrpc":"2.0","id":"s","method":"sampling/createMessage"})";
  const Routed asked = session.from_server(ask);
  ASSERT_EQ(asked.to_links.size(), 1u);
  EXPECT_EQ(to_link(asked, 1), ask);
  const std::string reply = R"({"jsonrpc":"2.0","id":"s","result":{}})";
  EXPECT_FALSE(session.from_link(0, reply).to_server);
  EXPECT_EQ(session.from_link(1, reply).to_server, reply);
  EXPECT_FALSE(session.from_link(1, reply).to_server);  // once

  // Calls in flight from both links: no one caller can answer.
  session.from_link(0, R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}})");
  const Routed ambiguous = session.from_server(ask);
  EXPECT_TRUE(ambiguous.to_links.empty());
  EXPECT_EQ(parsed(ambiguous.to_server)["error"]["code"], -32603);
}

TEST(KeptSession, ALostLinkCancelsOnlyItsOwnCallsAndAsks) {
  KeptSession session = twin_session();
  const json call_0 =
      parsed(session.from_link(0, R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}})")
                 .to_server);
  const json call_1 =
      parsed(session.from_link(1, R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}})")
                 .to_server);
  const auto told = session.detach(0);
  ASSERT_EQ(told.size(), 1u);
  EXPECT_EQ(json::parse(told[0])["params"]["requestId"], call_0["id"]);
  EXPECT_FALSE(session.attached(0));
  EXPECT_TRUE(session.attached(1));
  EXPECT_TRUE(to_link(session.from_server(answer_to(call_1)), 1));
  EXPECT_FALSE(session.from_link(0, R"({"jsonrpc":"2.0","id":2,"method":"tools/call"})").to_server);
}

TEST(KeptSession, ACancelledCallIsForgottenSoItHoldsNoLinkAsTheOneCalling) {
  KeptSession session = twin_session();
  const json call_0 =
      parsed(session.from_link(0, R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}})")
                 .to_server);
  EXPECT_TRUE(
      session
          .from_link(
              0, R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}})")
          .to_server);
  // The server never answers a cancelled call; a late answer anyway reaches no one.
  EXPECT_TRUE(session.from_server(answer_to(call_0)).to_links.empty());
  // Link 1's call is now the only one in flight: the server's request goes to link 1.
  EXPECT_TRUE(session.from_link(1, R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}})")
                  .to_server);
  const Routed asked =
      session.from_server(R"({"jsonrpc":"2.0","id":"s","method":"sampling/createMessage"})");
  ASSERT_EQ(asked.to_links.size(), 1u);
  EXPECT_TRUE(to_link(asked, 1));
}

TEST(KeptSession, AnAnswerToTheServerCountsWhateverSpellingOfItsIdTheLinkUses) {
  KeptSession session = twin_session();
  EXPECT_TRUE(
      to_link(session.from_server(R"({"jsonrpc":"2.0","id":"a\/b","method":"roots/list"})"), 0));
  const Routed answered = session.from_link(0, R"({"jsonrpc":"2.0","id":"a/b","result":{}})");
  EXPECT_TRUE(answered.to_server);
  EXPECT_TRUE(session.detach(0).empty());  // nothing left unanswered
}

TEST(KeptSession, TheShapeIsReadWithEscapesAndSpacesAsTheyCome) {
  const std::string text =
      "{ \"method\" : \"tools\\/call\", \"id\" : \"a\\\"b\" , "
      "\"params\":{\"_meta\":{\"progressToken\":12}} }";
  const auto shape = scan_shape(text);
  ASSERT_TRUE(shape);
  EXPECT_EQ(shape->method, "tools/call");
  ASSERT_TRUE(shape->id);
  EXPECT_EQ(text.substr(shape->id->begin, shape->id->end - shape->id->begin), "\"a\\\"b\"");
  ASSERT_TRUE(shape->request_token);
  EXPECT_EQ(text.substr(shape->request_token->begin, 2), "12");
}

}  // namespace
}  // namespace sb::connect
