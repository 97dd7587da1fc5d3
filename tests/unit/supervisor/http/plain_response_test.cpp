// A response written whole: its head as the connection frames it, the caller's id and
// the reply as two buffers, the head alone for HEAD, and its lease given back once written.
#include "supervisor/http/plain_response.hpp"

#include "tests/unit/supervisor/http/loopback.hpp"

namespace sb::supervisor {
namespace {

TEST(PlainResponse, WritesItsHeadAndBothPartsOfItsBody) {
  Loopback loop;
  ReplyBudget budget(1000);
  auto response = json_response(200, R"(,"result":{}})");
  response.body_head = R"({"id":7)";
  response.lease = std::move(*budget.reserve(100));
  std::optional<bool> written;
  write_plain_response(loop.wire(), std::move(response),
                       Framing{.cors = {{"Access-Control-Allow-Origin", "http://localhost"}}},
                       [&](bool ok) { written = ok; });
  EXPECT_EQ(budget.held(), 100u);
  ASSERT_TRUE(loop.run_until([&] { return written && loop.received_contains("}}"); }));
  EXPECT_TRUE(*written);
  EXPECT_EQ(budget.held(), 0u);
  EXPECT_EQ(loop.received(),
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            "Access-Control-Allow-Origin: http://localhost\r\nContent-Length: 20\r\n\r\n"
            R"({"id":7,"result":{}})");
}

TEST(PlainResponse, AHeadRequestGetsTheHeadAloneAndACloseIsSaid) {
  Loopback loop;
  std::optional<bool> written;
  write_plain_response(loop.wire(), text_response(404, "no such computer"),
                       Framing{.keep_alive = false, .head_only = true},
                       [&](bool ok) { written = ok; });
  ASSERT_TRUE(loop.run_until([&] { return written.has_value(); }));
  loop.settle();
  EXPECT_EQ(loop.received(),
            "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain; charset=utf-8\r\n"
            "Connection: close\r\nContent-Length: 16\r\n\r\n");
}

TEST(PlainResponse, AWriteToAClosedCallerFails) {
  Loopback loop;
  loop.client().close();
  std::optional<bool> written;
  // Large enough that the kernel cannot take it all before the reset arrives.
  write_plain_response(loop.wire(), text_response(200, std::string(8 << 20, 'x')), Framing{},
                       [&](bool ok) { written = ok; });
  ASSERT_TRUE(loop.run_until([&] { return written.has_value(); }));
  EXPECT_FALSE(*written);
}

}  // namespace
}  // namespace sb::supervisor
