// The revision gate's header rules in process (docs/protocol.md, "Revisions"): a repeated
// MCP header is refused, a name outside ASCII comes as Base64 and raw is refused, and a
// number in an Mcp-Param header is compared as a number.
#include "supervisor/routes/revision_gate.hpp"

#include <gtest/gtest.h>

#include <string>

namespace sb::supervisor {
namespace {

using json = nlohmann::json;

HttpRequest stateless_call(std::string name_header) {
  return HttpRequest{.method = "POST",
                     .target = "/mcp",
                     .protocol_version = "2026-07-28",
                     .mcp_method = "tools/call",
                     .mcp_name = std::move(name_header)};
}

json call(std::string tool, json arguments) {
  return json{{"jsonrpc", "2.0"},
              {"id", 9},
              {"method", "tools/call"},
              {"params",
               {{"name", std::move(tool)},
                {"arguments", std::move(arguments)},
                {"_meta",
                 {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                  {"io.modelcontextprotocol/clientCapabilities", json::object()}}}}}};
}

// The JSON-RPC code of a refusal, or 0 for none.
int refused_with(const std::optional<HttpResponse>& refusal) {
  if (!refusal) return 0;
  EXPECT_EQ(refusal->status, 400) << refusal->body;
  const json body = json::parse(refusal->body);
  EXPECT_EQ(body["id"], 9) << refusal->body;
  return body["error"]["code"].get<int>();
}

int verdict_on(const HttpRequest& request, const json& message) {
  return refused_with(check_revision(request, facts_of(message)).refusal);
}

TEST(RevisionGate, AnMcpNameOutsideAsciiComesAsBase64AndRawIsRefused) {
  const json message = call("zürich", json::object());
  EXPECT_EQ(verdict_on(stateless_call("=?base64?esO8cmljaA==?="), message), 0);
  EXPECT_EQ(verdict_on(stateless_call("zürich"), message), -32020);
  EXPECT_EQ(verdict_on(stateless_call("=?base64?esO8cmljaA=?="), message), -32020);
  EXPECT_EQ(verdict_on(stateless_call("=?base64?emFyaWNo?="), message), -32020);  // "zarich"
  // An ASCII name may come either way.
  EXPECT_EQ(verdict_on(stateless_call("echo"), call("echo", json::object())), 0);
  EXPECT_EQ(verdict_on(stateless_call("=?base64?ZWNobw==?="), call("echo", json::object())), 0);
}

TEST(RevisionGate, ARepeatedMcpHeaderIsRefusedWhateverTheRevision) {
  HttpRequest request = stateless_call("echo");
  request.repeated_mcp_header = "Mcp-Name";
  const auto refusal = check_revision(request, facts_of(call("echo", json::object()))).refusal;
  EXPECT_EQ(refused_with(refusal), -32020);
  EXPECT_NE(refusal->body.find("Mcp-Name header is sent more than once"), std::string::npos)
      << refusal->body;
  HttpRequest older{.method = "POST", .target = "/mcp", .protocol_version = "2025-06-18"};
  older.repeated_mcp_header = "MCP-Protocol-Version";
  EXPECT_EQ(verdict_on(older, call("echo", json::object())), -32020);
}

TEST(RevisionGate, AParamHeaderHoldsANumberAsANumberAndNoRawNonAscii) {
  const std::vector<ParamHeader> marked{{.argument = "count", .header = "Count"},
                                        {.argument = "region", .header = "Region"}};
  const json message = call("echo", json{{"count", 5}, {"region", "Zürich"}});
  const auto check = [&](std::string count, std::string region) {
    HttpRequest request = stateless_call("echo");
    request.mcp_params = {{"Count", std::move(count)}, {"Region", std::move(region)}};
    return refused_with(check_param_headers(request, message, marked));
  };
  const std::string region = "=?base64?WsO8cmljaA==?=";
  EXPECT_EQ(check("5", region), 0);
  EXPECT_EQ(check("5.0", region), 0);
  EXPECT_EQ(check("5e0", region), 0);
  EXPECT_EQ(check("6", region), -32020);
  EXPECT_EQ(check("5x", region), -32020);
  EXPECT_EQ(check("\"5\"", region), -32020);
  EXPECT_EQ(check("5", "Zürich"), -32020);  // raw, outside ASCII
  // A string argument is compared as text: "5.0" is not "5".
  const json text = call("echo", json{{"count", "5"}, {"region", "Zürich"}});
  HttpRequest request = stateless_call("echo");
  request.mcp_params = {{"Count", "5.0"}, {"Region", region}};
  EXPECT_EQ(refused_with(check_param_headers(request, text, marked)), -32020);
}

}  // namespace
}  // namespace sb::supervisor
