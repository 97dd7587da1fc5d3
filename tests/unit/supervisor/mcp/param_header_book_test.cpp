// The Mcp-Param headers the switchboard learns from its computers' tool lists
// (docs/protocol.md, "Revisions"): only arguments marked with a usable header name, per
// computer and tool, a later list replacing an earlier one, and a bounded book.
#include "supervisor/mcp/param_header_book.hpp"

#include <gtest/gtest.h>

#include <string>

namespace sb::supervisor {
namespace {

using json = nlohmann::json;

json tool(const std::string& name, const json& properties) {
  return json{{"name", name}, {"inputSchema", {{"type", "object"}, {"properties", properties}}}};
}

TEST(ParamHeaderBook, LearnsTheArgumentsEachToolMarks) {
  ParamHeaderBook book;
  book.learn("alpha", json::array({tool("echo", {{"region", {{"x-mcp-header", "Region"}}},
                                                 {"plain", {{"type", "string"}}},
                                                 {"bad", {{"x-mcp-header", "Not a name"}}},
                                                 {"number", {{"x-mcp-header", 7}}}}),
                                   tool("plain", {{"text", {{"type", "string"}}}}), json("junk")}));
  const auto* headers = book.of("alpha", "echo");
  ASSERT_TRUE(headers);
  ASSERT_EQ(headers->size(), 1u);
  EXPECT_EQ((*headers)[0].argument, "region");
  EXPECT_EQ((*headers)[0].header, "Region");
  EXPECT_FALSE(book.of("alpha", "plain"));
  EXPECT_FALSE(book.of("beta", "echo"));

  // A later list that no longer marks the argument stops its check.
  book.learn("alpha", json::array({tool("echo", {{"region", {{"type", "string"}}}})}));
  EXPECT_FALSE(book.of("alpha", "echo"));
}

// Appended rather than `"t" + std::to_string(i)`, which g++ 12 at -O3 flags with a false
// -Wrestrict.
std::string numbered(char prefix, std::size_t number) {
  std::string name(1, prefix);
  name += std::to_string(number);
  return name;
}

TEST(ParamHeaderBook, HoldsABoundedNumberOfToolsAndHeaders) {
  ParamHeaderBook book;
  json properties = json::object();
  for (std::size_t i = 0; i < ParamHeaderBook::kMaxHeadersPerTool + 5; ++i)
    properties[numbered('a', i)] = json{{"x-mcp-header", numbered('H', i)}};
  json tools = json::array();
  for (std::size_t i = 0; i < ParamHeaderBook::kMaxTools + 5; ++i)
    tools.push_back(tool(numbered('t', i), properties));
  book.learn("alpha", tools);
  ASSERT_TRUE(book.of("alpha", "t0"));
  EXPECT_EQ(book.of("alpha", "t0")->size(), ParamHeaderBook::kMaxHeadersPerTool);
  EXPECT_FALSE(book.of("alpha", numbered('t', ParamHeaderBook::kMaxTools)));
}

}  // namespace
}  // namespace sb::supervisor
