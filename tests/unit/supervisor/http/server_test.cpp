// The listener and its connections with a route of the test's own: keep-alive, a
// refusal that lets the client read it, a defect in a route failing only its request, a
// response that becomes an event stream, a caller hanging up while its call is pending,
// and GET /vm/attach going to the door, not the route.
#include "supervisor/http/server.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <stdexcept>

#include "tests/unit/supervisor/http/loopback.hpp"

namespace sb::supervisor {
namespace {

using tcp = boost::asio::ip::tcp;

class ServerTest : public ::testing::Test {
 protected:
  ServerTest() : client_(io_) {
    auto limits = std::make_shared<config::Config>();
    limits->limits.max_request_bytes = 64;
    config_ = limits;
    server_.emplace(io_, "127.0.0.1", 0, services_);
    server_->start();
    client_.connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), server_->port()));
    client_.non_blocking(true);
  }

  void send(std::string_view bytes) {
    client_.non_blocking(false);
    boost::asio::write(client_, boost::asio::buffer(bytes));
    client_.non_blocking(true);
  }

  bool run_until(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      io_.restart();
      io_.run_for(std::chrono::milliseconds(2));
      char buffer[4096];
      boost::system::error_code error;
      const std::size_t got = client_.read_some(boost::asio::buffer(buffer), error);
      if (!error) received_.append(buffer, got);
      if (error && error != boost::asio::error::would_block) closed_ = true;
    }
    return true;
  }

  std::size_t count(std::string_view text) const {
    std::size_t found = 0;
    for (auto at = received_.find(text); at != std::string::npos; at = received_.find(text, at + 1))
      ++found;
    return found;
  }

  Underway route(const HttpRequest& request, Respond respond, SendEvent send_event) {
    targets_.push_back(request.target);
    if (request.target == "/throws") throw std::runtime_error("a defect");
    if (request.target == "/pending") {
      pending_ = std::move(respond);
      return Underway{.abandon = [this] { ++hang_ups_; }};
    }
    if (request.target == "/stream") {
      send_event("{", R"("method":"notifications/progress"})", "");
      boost::asio::post(io_, [respond] { respond(json_response(200, R"({"id":1})")); });
      return Underway{.abandon = [] {}};
    }
    respond(text_response(200, "answered " + request.target));
    return {};
  }

  boost::asio::io_context io_;
  std::shared_ptr<const config::Config> config_;
  ReplyBudget replies_{1 << 20};
  Metrics metrics_;
  int doors_ = 0;
  HttpServices services_{
      .config = config_,
      .replies = replies_,
      .metrics = metrics_,
      .route = [this](const HttpRequest& request, Respond respond,
                      SendEvent send_event) { return route(request, respond, send_event); },
      .computer_door = {.admits =
                            [this](const std::optional<std::string>&, const std::string&) {
                              ++doors_;
                              return false;
                            },
                        .enter = [](const std::string&, base::UniqueFd&, std::string,
                                    const std::string&) { return HandOver::kRevoked; }}};
  std::optional<HttpServer> server_;
  tcp::socket client_;
  std::string received_;
  bool closed_ = false;
  std::vector<std::string> targets_;
  Respond pending_;
  int hang_ups_ = 0;
};

TEST_F(ServerTest, AnswersRequestsOneAfterAnotherOnOneConnection) {
  send("GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_TRUE(run_until([&] { return received_.ends_with("answered /b"); }));
  EXPECT_EQ(count("HTTP/1.1 200 OK"), 2u);
  EXPECT_LT(received_.find("answered /a"), received_.find("answered /b"));
  EXPECT_FALSE(closed_);
}

TEST_F(ServerTest, RefusesABodyOverTheLimitAndCloses) {
  send("POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n" + std::string(100, 'x'));
  ASSERT_TRUE(run_until([&] { return closed_; }));
  EXPECT_TRUE(received_.starts_with("HTTP/1.1 413 Payload Too Large\r\n"));
  EXPECT_NE(received_.find("Connection: close"), std::string::npos);
  EXPECT_TRUE(targets_.empty());
}

TEST_F(ServerTest, ADefectInARouteFailsItsOwnRequestOnly) {
  send("GET /throws HTTP/1.1\r\nHost: x\r\n\r\nGET /after HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_TRUE(run_until([&] { return received_.ends_with("answered /after"); }));
  EXPECT_TRUE(received_.starts_with("HTTP/1.1 500 Internal Server Error\r\n"));
}

TEST_F(ServerTest, AMessageBeforeTheResponseMakesItAnEventStream) {
  send("GET /stream HTTP/1.1\r\nHost: x\r\n\r\nGET /next HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_TRUE(run_until([&] { return received_.ends_with("answered /next"); }));
  const std::string stream = unchunked(body_of(received_));
  EXPECT_TRUE(
      stream.starts_with("event: message\ndata: {\"method\":\"notifications/progress\"}\n\n"
                         "event: message\ndata: {\"id\":1}\n\n"));
}

TEST_F(ServerTest, ACallerThatHangsUpWhileItsCallIsPendingEndsIt) {
  send("GET /pending HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_TRUE(run_until([&] { return static_cast<bool>(pending_); }));
  EXPECT_EQ(hang_ups_, 0);
  client_.close();
  ASSERT_TRUE(run_until([&] { return hang_ups_ == 1; }));
  pending_(text_response(200, "too late"));  // nobody is there: dropped
}

TEST_F(ServerTest, AnAttachGoesToTheDoorAndNeverToTheRoute) {
  send(
      "GET /vm/attach HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
      "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n");
  ASSERT_TRUE(run_until([&] { return closed_; }));
  EXPECT_TRUE(received_.starts_with("HTTP/1.1 401 Unauthorized\r\n"));
  EXPECT_EQ(doors_, 1);
  EXPECT_TRUE(targets_.empty());
}

}  // namespace
}  // namespace sb::supervisor
