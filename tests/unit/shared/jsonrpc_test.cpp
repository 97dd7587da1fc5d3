// JSON-RPC shapes: the nesting limit, and the error codes and messages of
// docs/protocol.md, "Errors".
#include <gtest/gtest.h>

#include "shared/jsonrpc.hpp"

namespace sb {
namespace {

TEST(JsonNesting, RefusesDeepBracketsButNotBracketsInStrings) {
  EXPECT_TRUE(jsonrpc::nesting_within(R"({"a":[1,{"b":2}]})", 3));
  EXPECT_FALSE(jsonrpc::nesting_within(std::string(300, '['), 256));
  EXPECT_TRUE(jsonrpc::nesting_within("\"" + std::string(300, '[') + "\"", 1));
  EXPECT_TRUE(jsonrpc::nesting_within(R"({"a":"\"[[["})", 1));
}

// The wire values of docs/protocol.md, "Errors": the end-to-end tests compare replies with
// these constants, so they are pinned here.
TEST(JsonRpcErrors, HaveTheDocumentedCodesAndMessages) {
  EXPECT_EQ(jsonrpc::kParseError, -32700);
  EXPECT_EQ(jsonrpc::kInvalidRequest, -32600);
  EXPECT_EQ(jsonrpc::kMethodNotFound, -32601);
  EXPECT_EQ(jsonrpc::kInvalidParams, -32602);
  EXPECT_EQ(jsonrpc::kNotAttached, -32001);
  EXPECT_EQ(jsonrpc::kOverloaded, -32002);
  EXPECT_EQ(jsonrpc::kTimeout, -32003);
  EXPECT_EQ(jsonrpc::kDisconnected, -32004);
  EXPECT_EQ(jsonrpc::relay_error_message(jsonrpc::kTimeout),
            "the VM did not answer in time; the call may or may not have run");
}

// A record torn for a moment (a worker publishing on every call while the supervisor reads
// it) is read from its last whole state and keeps the computer callable; only a record
// torn for `heartbeat_stale` takes it away (docs/architecture.md, "The status board").

}  // namespace
}  // namespace sb
