// The HTTP routes in process (docs/protocol.md, "Routes"): a request handed to
// route_request() as the HTTP server hands it, against the real services with no worker
// attached, its answer read as the server would write it. Token first, then the computer,
// then the body; the end-to-end tests keep what needs sockets and workers.
#include "supervisor/routes/routes.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "supervisor/callers/client_table.hpp"
#include "supervisor/config/config.hpp"
#include "tests/support/services_without_workers.hpp"

namespace sb::supervisor {
namespace {

using json = nlohmann::json;

std::string verifier_text(std::string_view secret) {
  return render_verifier(verifier_of(secret));
}

// alpha and beta; alice may use alpha's echo, root everything.
std::shared_ptr<const config::Config> two_computers() {
  std::string toml = "listen = \"127.0.0.1:0\"\n";
  for (const char* name : {"alpha", "beta"}) {
    toml += "[[computer]]\nname = \"";
    toml += name;
    toml += "\"\nsecret_sha256 = \"" + verifier_text(std::string(name) + "-secret") + "\"\n";
  }
  toml += "[[client]]\nname = \"alice\"\ntoken_sha256 = \"" + verifier_text("alice-token") +
          "\"\ncomputers = { alpha = [\"echo\"] }\n";
  toml += "[[client]]\nname = \"root\"\ntoken_sha256 = \"" + verifier_text("root-token") +
          "\"\ndefault_computer = \"alpha\"\ncomputers = { \"*\" = [\"*\"] }\n";
  return std::make_shared<config::Config>(config::parse_config(toml, "/home/u"));
}

class RoutesTest : public ::testing::Test {
 protected:
  // The registry knows the configured computers. Their workers are only queued: the loop
  // that would spawn them never runs, so no process starts and neither computer attaches.
  RoutesTest() {
    parts.workers.start(config->computers, [] {});
  }

  // The answer to `request`, which must come before route_request() returns: no computer
  // is attached, so nothing waits on one.
  HttpResponse answer(HttpRequest request) {
    std::optional<HttpResponse> answered;
    route_request(
        state, request, [&](HttpResponse response) { answered = std::move(response); },
        [](std::string, std::string, std::string) {});
    EXPECT_TRUE(answered) << request.method << " " << request.target;
    return answered ? std::move(*answered) : HttpResponse{.status = 0};
  }

  static HttpRequest post(std::string target, std::string_view token, std::string body) {
    return HttpRequest{.method = "POST",
                       .target = std::move(target),
                       .authorization = "Bearer " + std::string(token),
                       .peer = "127.0.0.1:5",
                       .body = std::move(body)};
  }

  boost::asio::io_context io;
  ServicesWithoutWorkers parts{io, std::nullopt};
  ResumableStreams resumable{io.get_executor(), parts.replies};
  std::shared_ptr<const config::Config> config = two_computers();
  SupervisorState state{.config = config,
                        .clients = std::make_shared<ClientTable>(config->clients),
                        .services = parts.services,
                        .resumable = resumable};
};

constexpr std::string_view kToolsList = R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})";

TEST_F(RoutesTest, AComputerThatDoesNotExistAndOneNotGrantedGetTheSameAnswer) {
  const HttpResponse not_granted =
      answer(post("/mcp/beta", "alice-token", std::string(kToolsList)));
  const HttpResponse unknown = answer(post("/mcp/gamma", "alice-token", std::string(kToolsList)));
  EXPECT_EQ(not_granted.status, 404);
  EXPECT_EQ(unknown.status, not_granted.status);
  EXPECT_EQ(unknown.body, not_granted.body);
  EXPECT_EQ(unknown.headers, not_granted.headers);
  EXPECT_EQ(answer(post("/mcp/beta", "root-token", std::string(kToolsList))).status, 200);
}

TEST_F(RoutesTest, NoTokenOrAnUnknownOneIs401BeforeTheComputerIsLookedAt) {
  for (const char* target : {"/mcp/alpha", "/mcp/gamma"}) {
    const HttpResponse unknown = answer(post(target, "no-such-token", std::string(kToolsList)));
    EXPECT_EQ(unknown.status, 401) << target;
    HttpRequest none = post(target, "", std::string(kToolsList));
    none.authorization.reset();
    EXPECT_EQ(answer(none).status, 401) << target;
  }
}

TEST_F(RoutesTest, AComputerNotAttachedListsVmStatusAlone) {
  const HttpResponse listed = answer(post("/mcp/alpha", "alice-token", std::string(kToolsList)));
  ASSERT_EQ(listed.status, 200) << listed.body;
  const json reply = json::parse(listed.body_head + listed.body);
  ASSERT_EQ(reply["result"]["tools"].size(), 1u) << reply;
  EXPECT_EQ(reply["result"]["tools"][0]["name"], "vm_status");
  EXPECT_FALSE(reply["result"].contains("resultType")) << "a caller of an older revision";
}

TEST_F(RoutesTest, ABodyThatIsNotOneMessageIsRefusedWith400) {
  const HttpResponse batch =
      answer(post("/mcp/alpha", "alice-token", "[" + std::string(kToolsList) + "]"));
  EXPECT_EQ(batch.status, 400);
  EXPECT_EQ(json::parse(batch.body)["error"]["code"], -32600) << batch.body;
  const HttpResponse nul = answer(post("/mcp/alpha", "alice-token", std::string("{\0}", 3)));
  EXPECT_EQ(nul.status, 400) << nul.body;
}

TEST_F(RoutesTest, A2026RequestWhoseHeaderDisagreesWithItsMetaIsRefused) {
  HttpRequest request = post("/mcp/alpha", "alice-token",
                             R"({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{)"
                             R"("io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
                             R"("io.modelcontextprotocol/clientCapabilities":{}}}})");
  request.protocol_version = "2025-11-25";
  const HttpResponse refused = answer(request);
  EXPECT_EQ(refused.status, 400) << refused.body;
  request.protocol_version = "2026-07-28";
  request.mcp_method = "tools/list";
  const HttpResponse listed = answer(request);
  ASSERT_EQ(listed.status, 200) << listed.body;
  EXPECT_EQ(json::parse(listed.body_head + listed.body)["result"]["resultType"], "complete");
}

TEST_F(RoutesTest, HealthzAnswersWithoutAToken) {
  const HttpResponse health = answer(HttpRequest{.method = "GET", .target = "/healthz"});
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(answer(HttpRequest{.method = "GET", .target = "/no/such/route"}).status, 404);
}

}  // namespace
}  // namespace sb::supervisor
