// A connected pair of TCP sockets on loopback in one loop: the server's end as the
// response writers use it (a Wire), the client's end read without blocking. Every wait is
// the loop run until something observable holds, bounded.
#pragma once

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "supervisor/http/wire.hpp"

namespace sb::supervisor {

class Loopback {
 public:
  using tcp = boost::asio::ip::tcp;

  Loopback() : client_(io_) {
    tcp::acceptor acceptor(io_, tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
    client_.connect(acceptor.local_endpoint());
    server_ = std::make_shared<boost::beast::tcp_stream>(acceptor.accept());
    client_.non_blocking(true);
  }

  boost::asio::io_context& io() { return io_; }
  boost::beast::tcp_stream& server() { return *server_; }
  tcp::socket& client() { return client_; }
  Wire wire(std::chrono::seconds write_timeout = std::chrono::seconds(5)) {
    return Wire{*server_, server_, write_timeout};
  }

  // Runs the loop, reading what reaches the client, until `done` holds (false after 5 s).
  bool run_until(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      io_.restart();
      io_.run_for(std::chrono::milliseconds(2));
      read_available();
    }
    return true;
  }

  // Runs the loop until it has nothing more to do at once.
  void settle() {
    for (int idle = 0; idle < 3;) {
      io_.restart();
      idle = io_.poll() == 0 ? idle + 1 : 0;
      read_available();
    }
  }

  // Everything the client has read, and whether the server's end was seen to close.
  const std::string& received() const { return received_; }
  bool client_saw_end() const { return saw_end_; }
  bool received_contains(std::string_view text) const {
    return received_.find(text) != std::string::npos;
  }

 private:
  void read_available() {
    char buffer[64 * 1024];
    for (;;) {
      boost::system::error_code error;
      const std::size_t got = client_.read_some(boost::asio::buffer(buffer), error);
      if (error == boost::asio::error::would_block) return;
      if (error) {
        saw_end_ = true;
        return;
      }
      received_.append(buffer, got);
    }
  }

  boost::asio::io_context io_;
  tcp::socket client_;
  std::shared_ptr<boost::beast::tcp_stream> server_;
  std::string received_;
  bool saw_end_ = false;
};

// The data of a chunked body: the chunks joined, their framing removed.
inline std::string unchunked(std::string_view body) {
  std::string data;
  while (!body.empty()) {
    const auto line_end = body.find("\r\n");
    if (line_end == std::string_view::npos) break;
    const std::size_t size = std::stoul(std::string(body.substr(0, line_end)), nullptr, 16);
    if (size == 0) break;
    data.append(body.substr(line_end + 2, size));
    body.remove_prefix(line_end + 2 + size + 2);
  }
  return data;
}

// What follows the head of an HTTP response.
inline std::string_view body_of(std::string_view response) {
  const auto end = response.find("\r\n\r\n");
  return end == std::string_view::npos ? std::string_view() : response.substr(end + 4);
}

}  // namespace sb::supervisor
