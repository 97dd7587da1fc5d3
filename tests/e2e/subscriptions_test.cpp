// End to end: subscriptions to a computer's resources (docs/protocol.md, "Subscriptions").
// A fake computer offers resources with subscriptions; alice is granted file:///srv/*.md,
// root every resource. Each caller's updates reach it on the event stream it opened with
// GET, the computer is subscribed once per URI, a stream that ends ends its subscriptions,
// and they cross a switch in place. A 2026-07-28 listener gets the list changes and
// updates it asked for and may have, tagged with its subscription id.
#include <gtest/gtest.h>

#include <csignal>
#include <memory>
#include <string>

#include "tests/e2e/fidelity_helpers.hpp"

namespace sbtest {
namespace {

const std::string kReport = "file:///srv/report.md";

FakeComputerOptions subscribable_computer() {
  FakeComputerOptions options;
  options.more_capabilities = json{{"resources", {{"subscribe", true}}},
                                   {"tools", {{"listChanged", true}}},
                                   {"prompts", {{"listChanged", true}}}};
  options.replies["resources/subscribe"] = json{{"result", json::object()}};
  options.replies["resources/unsubscribe"] = json{{"result", json::object()}};
  return options;
}

json updated(const std::string& uri) {
  return json{{"jsonrpc", "2.0"},
              {"method", "notifications/resources/updated"},
              {"params", {{"uri", uri}}}};
}

class Subscriptions : public AlphaTest {
 protected:
  Secret root_ = new_secret();

  ConfigBuilder config() const {
    return AlphaTest::config()
        .client_key("resources", R"({ alpha = ["file:///srv/*.md"] })")
        .client("root", root_, R"({ "*" = ["*"] })", "alpha")
        .client_key("resources", R"({ "*" = ["*"] })");
  }

  // A caller's GET stream on alpha, for its MCP session `session`.
  static std::unique_ptr<OpenCall> open_stream(const SwitchboardProcess& sb, const Secret& who,
                                               const std::string& session) {
    auto stream = std::make_unique<OpenCall>(
        sb.port(),
        HttpRequest{.method = "GET",
                    .target = kPath,
                    .token = who.secret,
                    .headers = {{"Accept", "text/event-stream"}, {"Mcp-Session-Id", session}}});
    EXPECT_EQ(stream->head().status, 200);
    EXPECT_TRUE(stream->head().is_event_stream());
    return stream;
  }

  static json ask(const SwitchboardProcess& sb, const Secret& who, const std::string& session,
                  const json& body) {
    const auto response = http(
        sb.port(), post(kPath, who.secret, body, with(kAcceptBoth, "Mcp-Session-Id", session)));
    EXPECT_EQ(response.status, 200) << response.body;
    return response.json();
  }

  static json subscribe(const SwitchboardProcess& sb, const Secret& who, const std::string& session,
                        const std::string& uri, const std::string& method = "resources/subscribe") {
    return ask(sb, who, session, rpc(1, method, json{{"uri", uri}}));
  }
};

TEST_F(Subscriptions, EverySubscriberGetsItsUpdatesOnItsStreamAndTheComputerIsSubscribedOnce) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb, subscribable_computer());
  ASSERT_TRUE(fake);
  EXPECT_EQ(ask(sb, alice_, "a",
                initialize_request(1))["result"]["capabilities"]["resources"]["subscribe"],
            true);
  // 2026-07-28 subscribes through subscriptions/listen: offered too.
  const json meta{{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                  {"io.modelcontextprotocol/clientCapabilities", json::object()}};
  const auto discovered =
      http(sb.port(), post(kPath, alice_.secret, rpc(2, "server/discover", json{{"_meta", meta}}),
                           with(with(kAcceptBoth, "MCP-Protocol-Version", "2026-07-28"),
                                "Mcp-Method", "server/discover")));
  EXPECT_EQ(discovered.json()["result"]["capabilities"]["resources"]["subscribe"], true)
      << discovered.body;
  auto alices = open_stream(sb, alice_, "a");
  auto roots = open_stream(sb, root_, "r");
  EXPECT_TRUE(subscribe(sb, alice_, "a", kReport).contains("result"));
  // The second subscriber is answered by the switchboard itself.
  EXPECT_EQ(subscribe(sb, root_, "r", kReport)["result"]["resultType"], "complete");
  ASSERT_EQ(fake->requests("resources/subscribe").size(), 1u);
  EXPECT_EQ(fake->requests("resources/subscribe")[0]["params"]["uri"], kReport);

  fake->send_text(updated("file:///srv/other.md").dump());  // nobody's
  fake->send_text(updated(kReport).dump());
  EXPECT_EQ(alices->next(), updated(kReport));
  EXPECT_EQ(roots->next(), updated(kReport));

  // alice leaves: the computer stays subscribed for root, whose stream still gets updates.
  EXPECT_TRUE(subscribe(sb, alice_, "a", kReport, "resources/unsubscribe").contains("result"));
  EXPECT_TRUE(fake->requests("resources/unsubscribe").empty());
  fake->send_text(updated(kReport).dump());
  EXPECT_EQ(roots->next(), updated(kReport));

  // root's stream ends: so does its subscription, the last, and the computer is told.
  roots.reset();
  ASSERT_TRUE(fake->wait_for_requests("resources/unsubscribe", 1));
  EXPECT_EQ(fake->requests("resources/unsubscribe")[0]["params"]["uri"], kReport);
}

TEST_F(Subscriptions, WhatTheGrantDoesNotAllowIsAnUnknownResourceAndACallerIsBounded) {
  SwitchboardProcess sb(config().block("[limits]\nmax_subscriptions = 2\n"));
  auto fake = attach_alpha(sb, subscribable_computer());
  ASSERT_TRUE(fake);
  const json refused = subscribe(sb, alice_, "a", "file:///etc/passwd");
  EXPECT_EQ(error_code(refused), -32602) << refused;
  EXPECT_EQ(refused["error"]["data"]["uri"], "file:///etc/passwd");

  EXPECT_TRUE(subscribe(sb, alice_, "a", "file:///srv/1.md").contains("result"));
  EXPECT_TRUE(subscribe(sb, alice_, "b", "file:///srv/2.md").contains("result"));
  const json third = subscribe(sb, alice_, "a", "file:///srv/3.md");
  EXPECT_EQ(error_code(third), -32600) << third;
  EXPECT_EQ(fake->requests("resources/subscribe").size(), 2u);
  EXPECT_TRUE(
      subscribe(sb, alice_, "a", "file:///srv/1.md", "resources/unsubscribe").contains("result"));
  EXPECT_TRUE(subscribe(sb, alice_, "a", "file:///srv/3.md").contains("result"));
}

TEST_F(Subscriptions, OneStreamPerSessionAndNoneForAStatelessCaller) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb, subscribable_computer());
  ASSERT_TRUE(fake);
  auto first = open_stream(sb, alice_, "a");
  const auto second =
      http(sb.port(),
           HttpRequest{.method = "GET",
                       .target = kPath,
                       .token = alice_.secret,
                       .headers = {{"Accept", "text/event-stream"}, {"Mcp-Session-Id", "a"}}});
  EXPECT_EQ(second.status, 409);
  const auto stateless =
      http(sb.port(), HttpRequest{.method = "GET",
                                  .target = kPath,
                                  .token = alice_.secret,
                                  .headers = {{"Accept", "text/event-stream"},
                                              {"MCP-Protocol-Version", "2026-07-28"}}});
  EXPECT_EQ(stateless.status, 405);
  const auto no_stream = http(sb.port(), HttpRequest{.method = "GET",
                                                     .target = kPath,
                                                     .token = alice_.secret,
                                                     .headers = {{"Accept", "application/json"}}});
  EXPECT_EQ(no_stream.status, 405);
  const auto unknown = http(sb.port(), HttpRequest{.method = "GET",
                                                   .target = "/mcp/nowhere",
                                                   .token = alice_.secret,
                                                   .headers = {{"Accept", "text/event-stream"}}});
  EXPECT_EQ(unknown.status, 404);
}

TEST_F(Subscriptions, SubscriptionsCrossASwitchInPlaceAndTheCallerOpensItsStreamAgain) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb, subscribable_computer());
  ASSERT_TRUE(fake);
  auto stream = open_stream(sb, alice_, "a");
  EXPECT_TRUE(subscribe(sb, alice_, "a", kReport).contains("result"));
  const std::size_t before = sb.audit().count("service_restarted");
  sb.send_signal(SIGUSR2);
  ASSERT_TRUE(
      sb.audit().wait_for_count("service_restarted", before + 1, {}, std::chrono::seconds(20)))
      << sb.diagnostics();
  EXPECT_TRUE(stream->connection().wait_for_server_close(kDefaultWait))
      << "the stream ends at the switch";
  stream = open_stream(sb, alice_, "a");
  fake->send_text(updated(kReport).dump());
  EXPECT_EQ(stream->next(), updated(kReport));
  EXPECT_EQ(fake->requests("resources/subscribe").size(), 1u) << "subscribed once, still";
  EXPECT_TRUE(fake->requests("resources/unsubscribe").empty());
}

json list_changed(const std::string& list) {
  return json{{"jsonrpc", "2.0"}, {"method", "notifications/" + list + "/list_changed"}};
}

// `message` as a listen stream carries it: tagged with its subscription id.
json tagged(json message, const std::string& subscription_id) {
  message["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] = subscription_id;
  return message;
}

TEST_F(Subscriptions, AStatelessListenerGetsWhatItAskedForAndItsGrantAllowsTagged) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb, subscribable_computer());
  ASSERT_TRUE(fake);
  const json meta{{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                  {"io.modelcontextprotocol/clientCapabilities", json::object()}};
  const json filter{{"toolsListChanged", true},
                    {"promptsListChanged", true},  // alice is granted no prompts
                    {"resourcesListChanged", true},
                    {"resourceSubscriptions", {kReport, "file:///etc/passwd"}}};
  auto listen = std::make_unique<OpenCall>(
      sb.port(),
      post(kPath, alice_.secret,
           rpc("L1", "subscriptions/listen", json{{"notifications", filter}, {"_meta", meta}}),
           with(with(kAcceptBoth, "MCP-Protocol-Version", "2026-07-28"), "Mcp-Method",
                "subscriptions/listen")));
  expect_event_stream_head(listen->head());
  EXPECT_EQ(
      listen->next(),
      (json{{"jsonrpc", "2.0"},
            {"method", "notifications/subscriptions/acknowledged"},
            {"params",
             {{"notifications", {{"toolsListChanged", true}, {"resourceSubscriptions", {kReport}}}},
              {"_meta", {{"io.modelcontextprotocol/subscriptionId", "L1"}}}}}}));
  ASSERT_TRUE(fake->wait_for_requests("resources/subscribe", 1));
  EXPECT_EQ(fake->requests("resources/subscribe")[0]["params"]["uri"], kReport);

  fake->send_text(list_changed("prompts").dump());  // not honoured: not passed on
  fake->send_text(list_changed("tools").dump());
  EXPECT_EQ(listen->next(), tagged(list_changed("tools"), "L1"));
  fake->send_text(updated(kReport).dump());
  EXPECT_EQ(listen->next(), tagged(updated(kReport), "L1"));

  // Its end ends its subscriptions.
  listen.reset();
  ASSERT_TRUE(fake->wait_for_requests("resources/unsubscribe", 1));
  EXPECT_EQ(fake->requests("resources/unsubscribe")[0]["params"]["uri"], kReport);
}

}  // namespace
}  // namespace sbtest
