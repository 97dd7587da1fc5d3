// The computer's socket as the worker's WebSocket stream reads it: never more than the
// frame in progress, so that between two messages the socket can leave one stream with the
// bytes not yet read and go on in another, which replays its handshake to itself, without
// the computer seeing anything but the one WebSocket it opened.
#include "worker/session_socket.hpp"

#include <unistd.h>

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace sb::worker {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace websocket = boost::beast::websocket;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;

class SessionSocketTest : public ::testing::Test {
 protected:
  SessionSocketTest() : client_(io_) {
    tcp::acceptor acceptor(io_, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
    client_.next_layer().connect(acceptor.local_endpoint());
    tcp::socket accepted_socket = acceptor.accept();
    bool upgraded = false;
    client_.async_handshake("127.0.0.1", "/vm/attach",
                            [&](beast::error_code error) { upgraded = !error; });
    // As the supervisor does: the upgrade request read apart, the socket then passed on
    // with whatever was read past it.
    beast::flat_buffer read_past;
    http::request<http::string_body> request;
    bool read = false;
    http::async_read(accepted_socket, read_past, request,
                     [&](beast::error_code error, std::size_t) { read = !error; });
    run_until([&] { return read; });
    server_ = std::make_unique<Server>(
        SessionSocket(std::move(accepted_socket), beast::buffers_to_string(read_past.data())));
    bool accepted = false;
    server_->async_accept(request, [&](beast::error_code error) { accepted = !error; });
    run_until([&] { return accepted && upgraded; });
  }

  using Server = websocket::stream<SessionSocket>;

  void run_until(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!done() && std::chrono::steady_clock::now() < deadline) {
      io_.restart();
      io_.run_for(std::chrono::milliseconds(2));
    }
    ASSERT_TRUE(done()) << "timed out";
  }

  std::string read_message(Server& server) {
    beast::flat_buffer buffer;
    std::optional<std::string> text;
    server.async_read(buffer, [&](beast::error_code error, std::size_t) {
      text = error ? "error: " + error.message() : beast::buffers_to_string(buffer.data());
    });
    run_until([&] { return text.has_value(); });
    return text.value_or("");
  }

  // A read the parked socket must never complete.
  void read_in_vain() {
    server_->async_read(scratch_, [](beast::error_code, std::size_t) {
      ADD_FAILURE() << "a parked reader's read completed";
    });
  }

  // The reader parks at its next boundary (a read of it is asked for here).
  std::unique_ptr<Server> resumed() {
    bool stopped = false;
    server_->next_layer().park([&] { stopped = true; });
    read_in_vain();
    run_until([&] { return stopped; });
    return taken_up();
  }

  // After the park: the socket (a copy, as the supervisor keeps) and the unread bytes go
  // on in a stream that replays its handshake.
  std::unique_ptr<Server> taken_up() {
    EXPECT_TRUE(server_->next_layer().parked());
    std::string unread = server_->next_layer().take_unread();
    tcp::socket copy(io_);
    copy.assign(tcp::v4(), ::dup(server_->next_layer().socket().native_handle()));
    server_.reset();
    auto next = std::make_unique<Server>(SessionSocket(std::move(copy), std::move(unread)));
    next->next_layer().swallow_writes(true);
    bool accepted = false;
    next->async_accept(net::buffer(kReplayedUpgrade),
                       [&](beast::error_code error) { accepted = !error; });
    run_until([&] { return accepted; });
    next->next_layer().swallow_writes(false);
    return next;
  }

  net::io_context io_;
  websocket::stream<tcp::socket> client_;
  std::unique_ptr<Server> server_;
  beast::flat_buffer scratch_;
};

TEST_F(SessionSocketTest, AResumedStreamGoesOnWhereTheFirstStopped) {
  // Sent together, so that the second and third arrive with the first.
  client_.write(net::buffer(std::string("one")));
  client_.write(net::buffer(std::string("two")));
  client_.write(net::buffer(std::string(70'000, 't')));  // a 64-bit length
  EXPECT_EQ(read_message(*server_), "one");
  EXPECT_TRUE(server_->next_layer().at_message_boundary());

  auto next = resumed();
  EXPECT_EQ(read_message(*next), "two");
  EXPECT_EQ(read_message(*next), std::string(70'000, 't'));

  // The computer sees the resumed stream's messages on its one WebSocket, and no second
  // 101 before them.
  bool written = false;
  next->async_write(net::buffer(std::string("reply")),
                    [&](beast::error_code error, std::size_t) { written = !error; });
  run_until([&] { return written; });
  beast::flat_buffer buffer;
  client_.read(buffer);
  EXPECT_EQ(beast::buffers_to_string(buffer.data()), "reply");
}

// What the session's buffer release waits on (docs/robustness.md, "Memory"): only bytes of
// data frames count, so a computer's pongs leave a quiet reader quiet.
TEST_F(SessionSocketTest, OnlyDataFramesCountAsBytesHandedToTheReader) {
  EXPECT_EQ(server_->next_layer().data_bytes_handed(), 0u);
  client_.write(net::buffer(std::string("one")));
  EXPECT_EQ(read_message(*server_), "one");
  const std::uint64_t after_one = server_->next_layer().data_bytes_handed();
  EXPECT_EQ(after_one, 2u + 4u + 3u);  // header, mask key, payload

  std::optional<std::string> text;
  server_->async_read(scratch_, [&](beast::error_code error, std::size_t) {
    text = error ? "error" : beast::buffers_to_string(scratch_.data());
  });
  bool ping_read = false;
  server_->control_callback([&](websocket::frame_type kind, beast::string_view) {
    ping_read = kind == websocket::frame_type::ping;
  });
  client_.async_ping({}, [](beast::error_code) {});
  run_until([&] { return ping_read; });
  EXPECT_EQ(server_->next_layer().data_bytes_handed(), after_one);
  client_.write(net::buffer(std::string("two")));
  run_until([&] { return text.has_value(); });
  EXPECT_EQ(*text, "two");
  EXPECT_EQ(server_->next_layer().data_bytes_handed(), 2 * after_one);
}

TEST_F(SessionSocketTest, AMessageInFragmentsIsABoundaryOnlyAfterItsLast) {
  client_.write_some(false, net::buffer(std::string("par")));
  beast::flat_buffer buffer;
  std::optional<std::string> text;
  server_->async_read(buffer, [&](beast::error_code, std::size_t) {
    text = beast::buffers_to_string(buffer.data());
  });
  // The first fragment handed on, the message not over: no boundary.
  run_until([&] { return !server_->next_layer().at_message_boundary(); });
  bool pinged = false;
  server_->control_callback([&](websocket::frame_type kind, beast::string_view) {
    pinged = kind == websocket::frame_type::ping;
  });
  client_.ping({});
  run_until([&] { return pinged; });
  EXPECT_FALSE(server_->next_layer().at_message_boundary()) << "a ping ends no message";
  client_.write_some(true, net::buffer(std::string("t")));
  run_until([&] { return text.has_value(); });
  EXPECT_EQ(*text, "part");
  EXPECT_TRUE(server_->next_layer().at_message_boundary());
}

TEST_F(SessionSocketTest, AReaderWaitingForAMessageParksAtOnceAndLosesNothing) {
  read_in_vain();
  io_.restart();
  io_.run_for(std::chrono::milliseconds(20));  // the read now waits on the socket
  bool stopped = false;
  server_->next_layer().park([&] { stopped = true; });
  run_until([&] { return stopped; });
  // Sent after the park: it waits in the kernel for the next stream.
  client_.write(net::buffer(std::string("after")));
  auto next = taken_up();
  EXPECT_EQ(read_message(*next), "after");
}

TEST_F(SessionSocketTest, AParkWaitsForTheMessageUnderWayToEnd) {
  client_.write_some(false, net::buffer(std::string("hal")));
  beast::flat_buffer buffer;
  std::optional<std::string> text;
  server_->async_read(buffer, [&](beast::error_code, std::size_t) {
    text = beast::buffers_to_string(buffer.data());
  });
  run_until([&] { return !server_->next_layer().at_message_boundary(); });
  bool stopped = false;
  server_->next_layer().park([&] { stopped = true; });
  io_.restart();
  io_.run_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(stopped) << "parked inside a message";
  client_.write_some(true, net::buffer(std::string("f")));
  client_.write(net::buffer(std::string("next")));
  run_until([&] { return text.has_value(); });
  EXPECT_EQ(*text, "half");
  // The reader asks for the next message and stops there; "next" is kept for the next
  // stream, whole or in part.
  read_in_vain();
  run_until([&] { return stopped; });
  auto next = taken_up();
  EXPECT_EQ(read_message(*next), "next");
}

}  // namespace
}  // namespace sb::worker
