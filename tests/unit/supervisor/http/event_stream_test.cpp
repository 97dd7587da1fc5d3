// An event stream (docs/protocol.md, "Progress and event streams"): messages as events,
// then the response as the last event and the last chunk; messages past a cap or the
// budget dropped; keep-alive comments while nothing else is sent; and a last event that
// arrives from its worker as it comes, line breaks split between its parts included.
#include "supervisor/http/event_stream.hpp"

#include "tests/unit/supervisor/http/loopback.hpp"

namespace sb::supervisor {
namespace {

struct Stream {
  Loopback loop;
  ReplyBudget budget{1 << 20};
  std::optional<bool> ended;
  EventStream events;

  explicit Stream(EventStream::Caps caps = {})
      : events(
            loop.wire(), budget, [this](bool ok) { ended = ok; }, caps) {}

  std::string data() const { return unchunked(body_of(loop.received())); }
};

TEST(EventStream, MessagesThenTheResponseAsTheLastEvent) {
  Stream stream;
  stream.events.open(Framing{});
  stream.events.event(R"({"method":"notifications/progress")", R"(,"params":{}})");
  auto response = json_response(200, R"(,"result":{}})");
  response.body_head = R"({"id":1)";
  stream.events.finish(std::move(response));
  ASSERT_TRUE(stream.loop.run_until([&] { return stream.ended.has_value(); }));
  EXPECT_TRUE(*stream.ended);
  EXPECT_TRUE(stream.loop.received().starts_with("HTTP/1.1 200 OK\r\n"));
  EXPECT_TRUE(stream.loop.received_contains("Content-Type: text/event-stream\r\n"));
  EXPECT_TRUE(stream.loop.received_contains("Transfer-Encoding: chunked\r\n"));
  EXPECT_TRUE(stream.loop.received().ends_with("0\r\n\r\n"));
  EXPECT_EQ(stream.data(),
            "event: message\ndata: {\"method\":\"notifications/progress\",\"params\":{}}\n\n"
            "event: message\ndata: {\"id\":1,\"result\":{}}\n\n");
  EXPECT_EQ(stream.budget.held(), 0u);
}

TEST(EventStream, AMessagePastTheCapsOrTheBudgetIsDroppedAndTheResponseIsNot) {
  // The stream's head counts while it waits to be written.
  Stream stream(EventStream::Caps{.max_bytes = 300});
  stream.events.open(Framing{});
  stream.events.event("{", std::string(400, ' ') + "}");  // past max_bytes
  stream.events.event("{", "}");
  stream.events.finish(json_response(200, std::string(100, ' ') + "{}"));
  ASSERT_TRUE(stream.loop.run_until([&] { return stream.ended.has_value(); }));
  EXPECT_EQ(stream.data(), "event: message\ndata: {}\n\nevent: message\ndata: " +
                               std::string(100, ' ') + "{}\n\n");
}

TEST(EventStream, MessagesTheBudgetCannotHoldAreDropped) {
  Stream stream;
  ReplyBudget small(4);
  EventStream events(
      stream.loop.wire(), small, [](bool) {}, EventStream::Caps{});
  events.open(Framing{});
  events.event("{", R"("too":"large"})");
  events.event("{", "}");
  stream.loop.settle();
  EXPECT_EQ(unchunked(body_of(stream.loop.received())), "event: message\ndata: {}\n\n");
}

TEST(EventStream, SaysItIsAliveWhileNothingElseIsSent) {
  Stream stream(EventStream::Caps{.keep_alive = std::chrono::milliseconds(20)});
  stream.events.open(Framing{});
  ASSERT_TRUE(stream.loop.run_until([&] { return stream.data().find(": keep-alive") == 0; }));
  stream.events.stop();
}

TEST(EventStream, ALastEventArrivingInPartsStartsOneDataLinePerLineBreak) {
  Stream stream;
  stream.events.open(Framing{});
  const std::string reply = "{\r\n\"result\":{},\r\n\"x\":1}";
  auto body = std::make_shared<ipc::ArrivingBody>(reply.size());
  HttpResponse response = json_response(200, "");
  response.body_head = R"({"id":2,)";
  response.arriving = body;
  stream.events.finish(std::move(response));
  // The first part ends between the CR and the LF of the second line break.
  const std::size_t split = reply.find("\r\n\"x\"") + 1;
  std::memcpy(body->free_space(), reply.data(), split);
  body->arrived_more(split);
  stream.loop.settle();
  EXPECT_FALSE(stream.ended);
  std::memcpy(body->free_space(), reply.data() + split, reply.size() - split);
  body->arrived_more(reply.size() - split);
  ASSERT_TRUE(stream.loop.run_until([&] { return stream.ended.has_value(); }));
  EXPECT_TRUE(*stream.ended);
  EXPECT_EQ(stream.data(),
            "event: message\ndata: {\"id\":2,\ndata: \"result\":{},\ndata: \"x\":1}\n\n");
}

TEST(EventStream, ALastEventWhoseWorkerLeavesEndsTheStream) {
  Stream stream;
  stream.events.open(Framing{});
  auto body = std::make_shared<ipc::ArrivingBody>(100);
  HttpResponse response = json_response(200, "");
  response.body_head = R"({"id":3,)";
  response.arriving = body;
  stream.events.finish(std::move(response));
  body->fail();
  ASSERT_TRUE(stream.loop.run_until([&] { return stream.ended.has_value(); }));
  EXPECT_FALSE(*stream.ended);
}

}  // namespace
}  // namespace sb::supervisor
