// What a computer offers, read from its capabilities (ipc/offers.hpp): each bit only for
// the member that names it, and nothing from anything that is not an object.
#include "ipc/offers.hpp"

#include <gtest/gtest.h>

namespace sb::ipc::offer {
namespace {

using json = nlohmann::json;

TEST(Offers, ReadEachCapabilityItNames) {
  EXPECT_EQ(of_capabilities(json("tools")), 0u);
  EXPECT_EQ(of_capabilities(json::object()), 0u);
  const json everything = json::parse(R"({
    "logging": {}, "prompts": {"listChanged": true}, "completions": {},
    "tools": {"listChanged": true}, "resources": {"subscribe": true},
    "extensions": {"io.modelcontextprotocol/tasks": {}},
    "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}})");
  EXPECT_EQ(of_capabilities(everything), kAll & ~kStatelessOnly);
}

TEST(Offers, ReadTheTasksOfTheHandshakeEraMemberByMember) {
  EXPECT_EQ(of_capabilities(json::parse(R"({"tasks": {"requests": {"tools": {"call": {}}}}})")),
            kTasksToolCall);
  EXPECT_EQ(of_capabilities(json::parse(R"({"tasks": {"list": {}, "cancel": {}}})")),
            kTasksList | kTasksCancel);
  // Task-augmented sampling is the client's side, not a tool call.
  EXPECT_EQ(of_capabilities(json::parse(R"({"tasks": {"requests": {"sampling": {}}}})")), 0u);
  EXPECT_EQ(of_capabilities(json::parse(R"({"tasks": {"requests": {"tools": {"call": 1}}}})")), 0u);
  EXPECT_EQ(of_capabilities(json::parse(R"({"tasks": true})")), 0u);
}

}  // namespace
}  // namespace sb::ipc::offer
