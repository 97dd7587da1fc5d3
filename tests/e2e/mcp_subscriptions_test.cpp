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
  // The second subscriber is answered by the switchboard itself, in its revision.
  EXPECT_EQ(subscribe(sb, root_, "r", kReport)["result"], json::object());
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
  // A URI is kept with its subscription: over 8 KiB, it is refused, whatever the grant.
  const json long_uri =
      subscribe(sb, root_, "r", "file:///srv/" + std::string(8 * 1024, 'x') + ".md");
  EXPECT_EQ(error_code(long_uri), -32602) << long_uri.dump().substr(0, 300);
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

// A subscription made in a session that never opens its stream ends with the resume window,
// as the end of its stream would end it; one whose stream is open stays.
TEST_F(Subscriptions, ASubscriptionWithoutAStreamEndsWithTheResumeWindow) {
  SwitchboardProcess sb(config().timeout_setting("resume_secs", 1));
  auto fake = attach_alpha(sb, subscribable_computer());
  ASSERT_TRUE(fake);
  auto roots = open_stream(sb, root_, "r");
  EXPECT_TRUE(subscribe(sb, root_, "r", kReport).contains("result"));
  EXPECT_TRUE(subscribe(sb, alice_, "a", "file:///srv/1.md").contains("result"));
  ASSERT_TRUE(fake->wait_for_requests("resources/unsubscribe", 1));
  EXPECT_EQ(fake->requests("resources/unsubscribe")[0]["params"]["uri"], "file:///srv/1.md");
  fake->send_text(updated(kReport).dump());
  EXPECT_EQ(roots->next(), updated(kReport)) << "a subscriber with its stream open lost it";
  EXPECT_EQ(fake->requests("resources/unsubscribe").size(), 1u);
}

// Session ids are the caller's to make up: a caller holds at most max_streams_per_caller
// streams, whatever ids it makes up, and takes no other caller's room.
TEST_F(Subscriptions, ACallerHoldsItsMaximumOfStreamsWhateverSessionsItMakesUp) {
  SwitchboardProcess sb(config().block("[limits]\nmax_streams_per_caller = 2\n"));
  auto fake = attach_alpha(sb, subscribable_computer());
  ASSERT_TRUE(fake);
  const auto get = [&](const Secret& who, const std::string& session) {
    return http(sb.port(), HttpRequest{.method = "GET",
                                       .target = kPath,
                                       .token = who.secret,
                                       .headers = {{"Accept", "text/event-stream"},
                                                   {"Mcp-Session-Id", session}}});
  };
  auto first = open_stream(sb, alice_, "a");
  auto second = open_stream(sb, alice_, "b");
  const auto third = get(alice_, "c");
  EXPECT_EQ(third.status, 429);
  EXPECT_NE(third.body.find("max_streams_per_caller"), std::string::npos) << third.body;
  auto others = open_stream(sb, root_, "a");  // another caller's room is its own
  first.reset();
  EXPECT_TRUE(eventually([&] {
    auto again = std::make_unique<OpenCall>(
        sb.port(),
        HttpRequest{.method = "GET",
                    .target = kPath,
                    .token = alice_.secret,
                    .headers = {{"Accept", "text/event-stream"}, {"Mcp-Session-Id", "c"}}});
    return again->head().status == 200;
  })) << "a stream that ended gives its place back";
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

  // The listen's id names every notification of its stream: it is bounded.
  const auto long_id =
      http(sb.port(), post(kPath, alice_.secret,
                           rpc(std::string(300, 'i'), "subscriptions/listen",
                               json{{"notifications", filter}, {"_meta", meta}}),
                           with(with(kAcceptBoth, "MCP-Protocol-Version", "2026-07-28"),
                                "Mcp-Method", "subscriptions/listen")));
  EXPECT_EQ(error_code(long_id.json()), -32602) << long_id.body.substr(0, 300);
  EXPECT_EQ(fake->requests("resources/subscribe").size(), 1u);
}

}  // namespace
}  // namespace sbtest
