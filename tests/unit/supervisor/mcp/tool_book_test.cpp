// What the switchboard learns from its computers' tool lists (docs/protocol.md,
// "Revisions" and "Tasks across eras"): the Mcp-Param headers, only for arguments marked
// with a usable header name, and which tools may run as tasks; per computer and tool, a
// later list replacing an earlier one, and a bounded book.
#include "supervisor/mcp/tool_book.hpp"

#include <gtest/gtest.h>

#include <string>

namespace sb::supervisor {
namespace {

using json = nlohmann::json;

json tool(const std::string& name, const json& properties) {
  return json{{"name", name}, {"inputSchema", {{"type", "object"}, {"properties", properties}}}};
}

TEST(ToolBook, LearnsTheArgumentsEachToolMarks) {
  ToolBook book;
  book.learn("alpha", json::array({tool("echo", {{"region", {{"x-mcp-header", "Region"}}},
                                                 {"plain", {{"type", "string"}}},
                                                 {"bad", {{"x-mcp-header", "Not a name"}}},
                                                 {"number", {{"x-mcp-header", 7}}}}),
                                   tool("plain", {{"text", {{"type", "string"}}}}), json("junk")}));
  const auto* headers = book.param_headers("alpha", "echo");
  ASSERT_TRUE(headers);
  ASSERT_EQ(headers->size(), 1u);
  EXPECT_EQ((*headers)[0].argument, "region");
  EXPECT_EQ((*headers)[0].header, "Region");
  EXPECT_FALSE(book.param_headers("alpha", "plain"));
  EXPECT_FALSE(book.param_headers("beta", "echo"));

  // A later list that no longer marks the argument stops its check.
  book.learn("alpha", json::array({tool("echo", {{"region", {{"type", "string"}}}})}));
  EXPECT_FALSE(book.param_headers("alpha", "echo"));
}

TEST(ToolBook, LearnsWhichToolsMayRunAsTasks) {
  ToolBook book;
  auto with_support = [](const std::string& name, const json& support) {
    json described = tool(name, json::object());
    described["execution"] = json{{"taskSupport", support}};
    return described;
  };
  book.learn("alpha", json::array({with_support("required", "required"),
                                   with_support("optional", "optional"),
                                   with_support("forbidden", "forbidden"), with_support("odd", 3),
                                   tool("plain", json::object())}));
  EXPECT_TRUE(book.runs_as_task("alpha", "required"));
  EXPECT_TRUE(book.runs_as_task("alpha", "optional"));
  EXPECT_FALSE(book.runs_as_task("alpha", "forbidden"));
  EXPECT_FALSE(book.runs_as_task("alpha", "odd"));
  EXPECT_FALSE(book.runs_as_task("alpha", "plain"));
  EXPECT_FALSE(book.runs_as_task("beta", "required"));
  EXPECT_FALSE(book.param_headers("alpha", "required"));

  // A later list that no longer says so stops it.
  book.learn("alpha", json::array({tool("required", json::object())}));
  EXPECT_FALSE(book.runs_as_task("alpha", "required"));
}

// Appended rather than `"t" + std::to_string(i)`, which g++ 12 at -O3 flags with a false
// -Wrestrict.
std::string numbered(char prefix, std::size_t number) {
  std::string name(1, prefix);
  name += std::to_string(number);
  return name;
}

TEST(ToolBook, HoldsABoundedNumberOfToolsAndHeaders) {
  ToolBook book;
  json properties = json::object();
  for (std::size_t i = 0; i < ToolBook::kMaxHeadersPerTool + 5; ++i)
    properties[numbered('a', i)] = json{{"x-mcp-header", numbered('H', i)}};
  json tools = json::array();
  for (std::size_t i = 0; i < ToolBook::kMaxTools + 5; ++i)
    tools.push_back(tool(numbered('t', i), properties));
  book.learn("alpha", tools);
  ASSERT_TRUE(book.param_headers("alpha", "t0"));
  EXPECT_EQ(book.param_headers("alpha", "t0")->size(), ToolBook::kMaxHeadersPerTool);
  EXPECT_FALSE(book.param_headers("alpha", numbered('t', ToolBook::kMaxTools)));
}

}  // namespace
}  // namespace sb::supervisor
