// The supervisor's reading of a plain tools/call without a JSON tree: what it takes, what
// it leaves to the tree, and that whatever it takes agrees with a full JSON parser.
#include "supervisor/mcp/call_scan.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <random>

#include "shared/jsonrpc.hpp"
#include "tests/support/json_reference.hpp"

namespace sb::supervisor {
namespace {

using json = nlohmann::json;

std::optional<ScannedToolCall> scan(std::string_view text) {
  return scan_tools_call(text, jsonrpc::kMaxNesting);
}

TEST(CallScan, TakesThePlainShapeAndTheCallersOwnBytes) {
  const std::string text = R"({"jsonrpc":"2.0","id":7,"method":"tools/call",)"
                           R"("params":{"name":"echo","arguments":{"b": [1, "two"] , "a":{}}}})";
  const auto call = scan(text);
  ASSERT_TRUE(call);
  EXPECT_EQ(call->id, "7");
  EXPECT_EQ(call->tool, "echo");
  EXPECT_EQ(call->params, R"({"name":"echo","arguments":{"b": [1, "two"] , "a":{}}})");
  EXPECT_EQ(call->arguments, R"({"b": [1, "two"] , "a":{}})");

  const auto other_order = scan(
      "\xEF\xBB\xBF { \"params\" : { \"name\" : \"x\" } , \"method\" : \"tools/call\" , "
      "\"id\" : \"a-1\" }\n");
  ASSERT_TRUE(other_order);
  EXPECT_EQ(other_order->id, R"("a-1")");
  EXPECT_EQ(other_order->tool, "x");
  EXPECT_FALSE(other_order->arguments);
  EXPECT_EQ(scan(R"({"id":-9223372036854775808,"method":"tools/call","params":{"name":"x"}})")->id,
            "-9223372036854775808");
  EXPECT_EQ(scan(R"({"id":18446744073709551615,"method":"tools/call","params":{"name":"x"}})")->id,
            "18446744073709551615");
}

TEST(CallScan, ComparesNamesDecoded) {
  const auto call =
      scan(R"({"id":1,"m\u0065thod":"tools\/call","params":{"n\u0061me":"\u00e9cho"}})");
  ASSERT_TRUE(call);
  EXPECT_EQ(call->tool,
            "\xC3\xA9"
            "cho");
}

// Whatever is not the plain shape, or names a member twice in any spelling, is left to the
// tree, which answers it as it always has.
TEST(CallScan, LeavesEverythingElseToTheTree) {
  for (
      const char* text : {
          R"({"id":1,"method":"tools/call","params":{"name":"a","name":"b"}})",
          R"({"id":1,"method":"tools/call","params":{"name":"a","n\u0061me":"b"}})",
          R"({"id":1,"method":"tools/call","params":{"name":"a","arguments":{},"arguments":{}}})",
          R"({"id":1,"id":2,"method":"tools/call","params":{"name":"a"}})",
          R"({"id":1,"method":"tools/call","method":"tools/call","params":{"name":"a"}})",
          R"({"id":1,"method":"tools/call","params":{"name":"a"},"params":{"name":"b"}})",
          R"({"id":1,"jsonrpc":"2.0","jsonrpc":"2.0","method":"tools/call","params":{"name":"a"}})",
          R"({"id":1,"method":"tools/call","params":{"name":"a","_meta":{"progressToken":1}}})",
          R"({"id":1,"method":"tools/call","params":{"name":"a","task":{}}})",
          R"({"id":1,"method":"tools/call","params":{"name":"a"},"result":1})",
          R"({"id":1,"method":"tools/list","params":{"name":"a"}})",
          R"({"id":1,"method":"tools/call"})",
          R"({"id":1,"method":"tools/call","params":{}})",
          R"({"id":1,"method":"tools/call","params":[]})",
          R"({"id":1,"method":"tools/call","params":{"name":7}})",
          R"({"id":1,"method":"tools/call","params":{"name":"a","arguments":[]}})",
          R"({"id":1,"method":"tools/call","params":{"name":"a","arguments":null}})",
          R"({"method":"tools/call","params":{"name":"a"}})",
          R"({"id":null,"method":"tools/call","params":{"name":"a"}})",
          R"({"id":1.0,"method":"tools/call","params":{"name":"a"}})",
          R"({"id":1e2,"method":"tools/call","params":{"name":"a"}})",
          R"({"id":18446744073709551616,"method":"tools/call","params":{"name":"a"}})",
          R"({"id":true,"method":"tools/call","params":{"name":"a"}})",
          R"({"id":{},"method":"tools/call","params":{"name":"a"}})",
          R"({"id":1,"method":"tools/call","params":{"name":"a"}} x)",
          R"({"id":1,"method":"tools/call","params":{"name":"a"})",
          R"([{"id":1,"method":"tools/call","params":{"name":"a"}}])",
          R"({"id":01,"method":"tools/call","params":{"name":"a"}})",
          "{\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"\xFF\"}}",
          "",
      }) {
    EXPECT_FALSE(scan(text)) << text;
  }
  const std::string plain = R"({"id":1,"method":"tools/call","params":{"name":"a"}})";
  EXPECT_FALSE(scan(plain + '\0')) << "a NUL byte after the object";
  EXPECT_FALSE(scan(R"({"id":1,"method":"tools/call","params":{"name":"a)" + std::string(1, '\0') +
                    R"("}})"))
      << "a NUL byte in a string";
}

// The switchboard reads nothing inside arguments: a repeat there is the computer's to read,
// and it gets the caller's bytes.
TEST(CallScan, ArgumentsTravelAsTheCallerWroteThem) {
  const auto call =
      scan(R"({"id":1,"method":"tools/call","params":{"name":"a","arguments":{"x":1,"x":2}}})");
  ASSERT_TRUE(call);
  EXPECT_EQ(call->arguments, R"({"x":1,"x":2})");
}

TEST(CallScan, NestingIsLimited) {
  auto nested = [](int depth) {
    return R"({"id":1,"method":"tools/call","params":{"name":"a","arguments":{"x":)" +
           std::string(depth - 3, '[') + std::string(depth - 3, ']') + "}}}";
  };
  EXPECT_TRUE(scan(nested(jsonrpc::kMaxNesting)));
  EXPECT_FALSE(scan(nested(jsonrpc::kMaxNesting + 1)));
}

// A request built from the pieces that matter: the members a plain call has, in any
// order, sometimes with one more (another name, an escaped spelling, a repeat), and values
// of every kind where those members usually hold the right one.
std::string random_request(std::mt19937& random) {
  static const std::vector<std::string> ids = {
      "1", "-3", "\"x\"", "\"\\u0041\"", "1.5", "null", "18446744073709551616", "{}"};
  static const std::vector<std::string> top_extras = {
      "\"jsonrpc\"", "\"id\"", "\"method\"", "\"params\"", "\"m\\u0065thod\"", "\"result\""};
  static const std::vector<std::string> params_extras = {"\"name\"", "\"n\\u0061me\"",
                                                         "\"arguments\"", "\"_meta\"", "\"x\""};
  static const std::vector<std::string> values = {"\"echo\"",
                                                  "\"tools/call\"",
                                                  "\"tools\\/call\"",
                                                  "{}",
                                                  "{\"a\":[1,{\"b\":null}]}",
                                                  "[]",
                                                  "7",
                                                  "\"\\u00e9\"",
                                                  "true"};
  const auto pick = [&](const std::vector<std::string>& from) {
    return from[random() % from.size()];
  };
  const auto usually = [&](std::string right) { return random() % 5 ? right : pick(values); };
  const auto object = [&](std::vector<std::string> members) {
    std::shuffle(members.begin(), members.end(), random);
    std::string text = "{";
    for (std::size_t i = 0; i < members.size(); ++i) {
      if (i > 0) text += random() % 6 ? "," : " , ";
      text += members[i];
    }
    return text + "}";
  };
  std::vector<std::string> params{"\"name\":" + usually("\"echo\"")};
  if (random() % 2) params.push_back("\"arguments\":" + usually("{\"k\":[1,\"v\"]}"));
  if (random() % 3 == 0) params.push_back(pick(params_extras) + ":" + pick(values));
  std::vector<std::string> request{"\"id\":" + pick(ids), "\"method\":" + usually("\"tools/call\""),
                                   "\"params\":" + (random() % 8 ? object(params) : pick(values))};
  if (random() % 2) request.push_back("\"jsonrpc\":\"2.0\"");
  if (random() % 3 == 0) request.push_back(pick(top_extras) + ":" + pick(values));
  return object(request);
}

// What the scanner takes, a full parser reads the same way: the same id, tool and params,
// the method tools/call, no other member, and no member twice.
TEST(CallScan, AgreesWithAFullParserOnWhatItTakes) {
  std::mt19937 random(20261201);
  int taken = 0;
  for (int round = 0; round < 30000; ++round) {
    const std::string text = random_request(random);
    const auto call = scan(text);
    if (!call) continue;
    ++taken;
    const json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
    ASSERT_TRUE(parsed.is_object()) << text;
    EXPECT_FALSE(sbtest::repeats_a_request_member(text)) << text;
    EXPECT_EQ(parsed["method"], "tools/call") << text;
    EXPECT_EQ(json::parse(call->id), parsed["id"]) << text;
    EXPECT_TRUE(parsed["id"].is_string() || parsed["id"].is_number_integer()) << text;
    const json& params = parsed["params"];
    EXPECT_EQ(json::parse(call->params), params) << text;
    EXPECT_EQ(params["name"], call->tool) << text;
    EXPECT_EQ(call->arguments.has_value(), params.contains("arguments")) << text;
    if (call->arguments) {
      EXPECT_EQ(json::parse(*call->arguments), params["arguments"]) << text;
    }
    for (const auto& [key, value] : parsed.items()) {
      EXPECT_TRUE(key == "jsonrpc" || key == "id" || key == "method" || key == "params") << text;
    }
    for (const auto& [key, value] : params.items()) {
      EXPECT_TRUE(key == "name" || key == "arguments") << text;
    }
  }
  EXPECT_GT(taken, 2000) << "the generator rarely makes a plain call";
}

}  // namespace
}  // namespace sb::supervisor
