// The kept session (connect/kept_session.hpp): one MCP session with the server across many
// attaches, each message routed as the switchboard and the server would have it.
#include "connect/kept_session.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace sb::connect {
namespace {

using json = nlohmann::json;

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
  session.attach();
  const json to_server = parsed(session.from_link(kInitialize).to_server);
  const std::string answer = R"({"jsonrpc":"2.0","id":)" + to_server["id"].dump() +
                             R"(,"result":{"serverInfo":{"name":"s"}}})";
  EXPECT_EQ(parsed(session.from_server(answer).to_link)["id"], 0);
  EXPECT_TRUE(session.from_link(kInitialized).to_server);
  return session;
}

TEST(KeptSession, TheFirstInitializeGoesToTheServerALaterOneIsAnsweredFromIt) {
  KeptSession session = initialized_session();
  EXPECT_TRUE(session.initialized());
  session.detach();
  session.attach();
  const Routed again =
      session.from_link(R"({"jsonrpc":"2.0","id":"x","method":"initialize","params":{}})");
  EXPECT_FALSE(again.to_server);
  EXPECT_EQ(parsed(again.to_link),
            (json{{"jsonrpc", "2.0"}, {"id", "x"}, {"result", {{"serverInfo", {{"name", "s"}}}}}}));
  const Routed initialized = session.from_link(kInitialized);
  EXPECT_FALSE(initialized.to_server);
  EXPECT_FALSE(initialized.to_link);
  EXPECT_TRUE(initialized.dropped.empty());
}

TEST(KeptSession, AFailedInitializeIsNotKept) {
  KeptSession session;
  session.attach();
  const json to_server = parsed(session.from_link(kInitialize).to_server);
  session.from_server(R"({"jsonrpc":"2.0","id":)" + to_server["id"].dump() +
                      R"(,"error":{"code":-32603,"message":"no"}})");
  EXPECT_FALSE(session.initialized());
  EXPECT_TRUE(session.from_link(kInitialize).to_server);
}

TEST(KeptSession, IdsAndProgressTokensTowardTheServerAreItsOwnAndComeBackAsTheLinksWere) {
  KeptSession session = initialized_session();
  const std::string call =
      R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"t","_meta":{"progressToken":"tok"}}})";
  const json first = parsed(session.from_link(call).to_server);
  EXPECT_EQ(first["params"]["_meta"]["progressToken"], first["id"]);
  EXPECT_EQ(first["params"]["name"], "t");
  const std::string ours = first["id"].dump();

  const json progress = parsed(
      session
          .from_server(
              R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":)" +
              ours + R"(,"progress":1}})")
          .to_link);
  EXPECT_EQ(progress["params"]["progressToken"], "tok");
  const json reply =
      parsed(session.from_server(R"({"jsonrpc":"2.0","id":)" + ours + R"(,"result":{}})").to_link);
  EXPECT_EQ(reply["id"], 7);

  // The same link id again, as a new attach would send it: a new id toward the server.
  const json second = parsed(session.from_link(call).to_server);
  EXPECT_NE(second["id"], first["id"]);
}

TEST(KeptSession, ALostAttachsCallsAreCancelledAndTheirLateRepliesAndProgressReachNoOne) {
  KeptSession session = initialized_session();
  const json call = parsed(
      session
          .from_link(
              R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"_meta":{"progressToken":1}}})")
          .to_server);
  const std::string ours = call["id"].dump();
  const auto told = session.detach();
  ASSERT_EQ(told.size(), 1u);
  const json cancel = json::parse(told[0]);
  EXPECT_EQ(cancel["method"], "notifications/cancelled");
  EXPECT_EQ(cancel["params"]["requestId"], call["id"]);

  session.attach();
  const Routed progress = session.from_server(
      R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":)" + ours +
      R"(,"progress":1}})");
  EXPECT_FALSE(progress.to_link);
  const Routed late = session.from_server(R"({"jsonrpc":"2.0","id":)" + ours + R"(,"result":{}})");
  EXPECT_FALSE(late.to_link);
  EXPECT_FALSE(late.to_server);
}

TEST(KeptSession, ACancellationNamesTheServersIdAndOneForNothingInFlightIsDropped) {
  KeptSession session = initialized_session();
  const json call =
      parsed(session.from_link(R"({"jsonrpc":"2.0","id":"c","method":"tools/call","params":{}})")
                 .to_server);
  const json cancel = parsed(
      session
          .from_link(
              R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c","reason":"r"}})")
          .to_server);
  EXPECT_EQ(cancel["params"]["requestId"], call["id"]);
  EXPECT_EQ(cancel["params"]["reason"], "r");
  const Routed unknown = session.from_link(
      R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"zz"}})");
  EXPECT_FALSE(unknown.to_server);
}

TEST(KeptSession, TheServersRequestsAreAnsweredWithAnErrorWhenNoAttachCanAnswerThem) {
  KeptSession session = initialized_session();
  const std::string ask = R"({"jsonrpc":"2.0","id":"s1","method":"roots/list"})";
  EXPECT_EQ(parsed(session.from_server(ask).to_link)["id"], "s1");
  const auto told = session.detach();
  ASSERT_EQ(told.size(), 1u);
  EXPECT_EQ(json::parse(told[0])["id"], "s1");
  EXPECT_EQ(json::parse(told[0])["error"]["code"], -32603);

  const Routed detached =
      session.from_server(R"({"jsonrpc":"2.0","id":"s2","method":"roots/list"})");
  EXPECT_FALSE(detached.to_link);
  EXPECT_EQ(parsed(detached.to_server)["id"], "s2");

  // Answered while attached: nothing left to answer at the next detach.
  session.attach();
  session.from_server(ask);
  EXPECT_TRUE(session.from_link(R"({"jsonrpc":"2.0","id":"s1","result":{"roots":[]}})").to_server);
  EXPECT_TRUE(session.detach().empty());
}

TEST(KeptSession, ANotificationWhileDetachedIsDroppedAndOneWhileAttachedPassesAsItIs) {
  KeptSession session = initialized_session();
  const std::string note =
      R"({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}})";
  EXPECT_EQ(session.from_server(note).to_link, note);
  session.detach();
  EXPECT_FALSE(session.from_server(note).to_link);
}

TEST(KeptSession, WhatIsNotOneObjectIsNotRoutedFromTheLink) {
  KeptSession session = initialized_session();
  for (const std::string_view text : {"[1,2]", "{\"id\":1,\"id\":2,\"method\":\"x\"}", "{", "3"}) {
    const Routed routed = session.from_link(text);
    EXPECT_FALSE(routed.to_server) << text;
    EXPECT_FALSE(routed.dropped.empty()) << text;
  }
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
