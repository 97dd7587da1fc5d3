// A plain response whose body is still arriving from its worker: the head and the
// caller's id at once, each part as it comes, the opening brace never; cut short when the
// worker leaves half-way.
#include "supervisor/http/arriving_reply.hpp"

#include <cstring>

#include "tests/unit/supervisor/http/loopback.hpp"

namespace sb::supervisor {
namespace {

void arrive(ipc::ArrivingBody& body, std::string_view part) {
  std::memcpy(body.free_space(), part.data(), part.size());
  body.arrived_more(part.size());
}

TEST(ArrivingReply, SendsTheHeadAtOnceAndEachPartAsItComes) {
  Loopback loop;
  ReplyBudget budget(1000);
  const std::string reply = R"({"result":{"n":1}})";
  auto body = std::make_shared<ipc::ArrivingBody>(reply.size());
  HttpResponse response = json_response(200, "");
  response.body_head = R"({"id":9,)";
  response.arriving = body;
  response.lease = std::move(*budget.reserve(reply.size()));
  std::optional<bool> ended;
  ArrivingReply writer(loop.wire(), std::move(response), Framing{}, [&](bool ok) { ended = ok; });
  writer.start();
  const std::string head_and_id = R"({"id":9,)";
  ASSERT_TRUE(loop.run_until([&] { return loop.received().ends_with(head_and_id); }));
  EXPECT_TRUE(loop.received_contains("Content-Length: " +
                                     std::to_string(head_and_id.size() + reply.size() - 1)));
  arrive(*body, reply.substr(0, 8));
  ASSERT_TRUE(loop.run_until([&] { return loop.received().ends_with(R"({"id":9,"result)"); }));
  EXPECT_FALSE(ended);
  EXPECT_EQ(budget.held(), reply.size()) << "the lease is held until the last byte is written";
  arrive(*body, reply.substr(8));
  ASSERT_TRUE(loop.run_until([&] { return ended.has_value(); }));
  EXPECT_TRUE(*ended);
  EXPECT_EQ(body_of(loop.received()), R"({"id":9,"result":{"n":1}})");
  EXPECT_EQ(budget.held(), 0u);
  // The bytes go with the lease, not when the connection's next request replaces the writer.
  EXPECT_EQ(body.use_count(), 1);
}

TEST(ArrivingReply, IsCutShortWhenItsWorkerLeaves) {
  Loopback loop;
  auto body = std::make_shared<ipc::ArrivingBody>(100);
  HttpResponse response = json_response(200, "");
  response.body_head = R"({"id":9,)";
  response.arriving = body;
  std::optional<bool> ended;
  ArrivingReply writer(loop.wire(), std::move(response), Framing{}, [&](bool ok) { ended = ok; });
  writer.start();
  arrive(*body, R"({"result")");
  loop.settle();
  body->fail();
  ASSERT_TRUE(loop.run_until([&] { return ended.has_value(); }));
  EXPECT_FALSE(*ended);
  EXPECT_EQ(body_of(loop.received()), R"({"id":9,"result")");
}

}  // namespace
}  // namespace sb::supervisor
