// switchboard-bare-relay: the relay's layout with none of its work, the bench's floor.
//
//   caller ──HTTP/1.1──▶ front ──Unix socket──▶ back ──WebSocket──▶ computer, and back
//
// The front process takes callers' keep-alive POSTs and passes each body, tagged, to the
// back that serves the computer its target names (/mcp/c<K>). A back is a process per
// computer, as a worker is: it writes each body to its computer as one WebSocket message.
// The bench's fake computers answer calls in the order they arrive, so a back tags each
// message that comes back with the oldest unanswered tag, and the front answers that caller
// with it: 200, application/json, Content-Length. Bodies move as they are, read straight
// into place when large, the way the relay's channel reads them.
//
// Nothing else: no authentication, policy, JSON, ids, deadlines, caps, audit or metrics. A
// correct relay does at least this much on the same layout, so what this costs, measured
// beside the relay in the same run, is a floor for it (docs/benchmarks.md). It is not a
// design to follow: it trusts its computers' order and bounds nothing.
//
// Usage: switchboard-bare-relay CALLER_PORT COMPUTER_PORT COMPUTERS
// Binds both ports and prints "listening"; accepts COMPUTERS WebSocket connections on
// COMPUTER_PORT, forking a back for each, then serves callers on CALLER_PORT (their
// connects wait in the backlog meanwhile). A back ends with the front: its link's end of
// stream, or the parent-death signal.
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <charconv>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/asio_names.hpp"

namespace {

using namespace sb::asio_names;
using local = net::local::stream_protocol;

constexpr std::size_t kMaxMessageBytes = 64 * 1024 * 1024;
constexpr std::size_t kStagingBytes = 64 * 1024;

[[noreturn]] void die(const std::string& why) {
  std::cerr << "switchboard-bare-relay: " << why << std::endl;
  std::_Exit(1);
}

// Bytes of known size, never zero-filled: a 16 MiB body is written once, by its read.
struct Bytes {
  std::unique_ptr<char[]> data;
  std::size_t size = 0;
  static Bytes of_size(std::size_t size) {
    return Bytes{std::make_unique_for_overwrite<char[]>(size), size};
  }
};

// A framed stream between the front and a back: [u32 size][u32 tag][size bytes], frames
// queued and written together, large bodies read straight into place.
class Link {
 public:
  using OnFrame = std::function<void(std::uint32_t tag, Bytes body)>;

  Link(net::io_context& io, int fd, OnFrame on_frame)
      : socket_(io, local(), fd), on_frame_(std::move(on_frame)), staging_(kStagingBytes) {}

  void start() { read(); }

  void send(std::uint32_t tag, std::string text) {
    outbox_.push_back(Outgoing{{std::uint32_t(text.size()), tag}, std::move(text), {}});
    if (in_flight_ == 0) write();
  }
  void send(std::uint32_t tag, beast::flat_buffer message) {
    const auto size = std::uint32_t(message.size());
    outbox_.push_back(Outgoing{{size, tag}, {}, std::move(message)});
    if (in_flight_ == 0) write();
  }
  // A written message's buffer, kept for the next read (its capacity is what matters).
  beast::flat_buffer take_spare() {
    beast::flat_buffer spare = std::move(spare_);
    spare_ = beast::flat_buffer();
    spare.clear();
    return spare;
  }

 private:
  struct Outgoing {
    std::array<std::uint32_t, 2> header;
    std::string text;
    beast::flat_buffer message;
  };

  void write() {
    std::vector<net::const_buffer> parts;
    for (const Outgoing& outgoing : outbox_) {
      parts.push_back(net::buffer(outgoing.header));
      parts.push_back(net::buffer(outgoing.text));
      parts.push_back(outgoing.message.data());
      if (parts.size() >= 3 * 64) break;
    }
    in_flight_ = parts.size() / 3;
    net::async_write(socket_, parts, [this](beast::error_code error, std::size_t) {
      if (error) die("link write: " + error.message());
      for (; in_flight_ > 0; --in_flight_) {
        if (outbox_.front().message.capacity() > spare_.capacity())
          spare_ = std::move(outbox_.front().message);
        outbox_.pop_front();
      }
      if (!outbox_.empty()) write();
    });
  }

  void read() {
    if (in_body_ && staged_ == 0 && body_.size - body_filled_ >= kStagingBytes) {
      net::async_read(socket_,
                      net::buffer(body_.data.get() + body_filled_, body_.size - body_filled_),
                      [this](beast::error_code error, std::size_t) {
                        if (error) die("link read: " + error.message());
                        finish_body();
                        read();
                      });
      return;
    }
    socket_.async_read_some(net::buffer(staging_.data() + staged_, staging_.size() - staged_),
                            [this](beast::error_code error, std::size_t got) {
                              if (error == net::error::eof)
                                std::_Exit(0);  // the other end is gone: so are we
                              if (error) die("link read: " + error.message());
                              staged_ += got;
                              consume_staged();
                              read();
                            });
  }

  void consume_staged() {
    std::size_t at = 0;
    for (;;) {
      if (!in_body_) {
        std::array<std::uint32_t, 2> header;
        if (staged_ - at < sizeof header) break;
        std::memcpy(header.data(), staging_.data() + at, sizeof header);
        at += sizeof header;
        body_ = Bytes::of_size(header[0]);
        tag_ = header[1];
        body_filled_ = 0;
        in_body_ = true;
      }
      const std::size_t take = std::min(staged_ - at, body_.size - body_filled_);
      std::memcpy(body_.data.get() + body_filled_, staging_.data() + at, take);
      body_filled_ += take;
      at += take;
      if (body_filled_ < body_.size) break;
      finish_body();
    }
    std::memmove(staging_.data(), staging_.data() + at, staged_ - at);
    staged_ -= at;
  }

  void finish_body() {
    in_body_ = false;
    on_frame_(tag_, std::move(body_));
  }

  local::socket socket_;
  OnFrame on_frame_;
  std::vector<char> staging_;
  std::size_t staged_ = 0;
  bool in_body_ = false;
  std::uint32_t tag_ = 0;
  Bytes body_;
  std::size_t body_filled_ = 0;
  std::deque<Outgoing> outbox_;
  std::size_t in_flight_ = 0;
  beast::flat_buffer spare_;
};

// ---- a back: one computer's WebSocket ----

class Back {
 public:
  Back(net::io_context& io, int link_fd, int computer_fd)
      : ws_(tcp::socket(io, tcp::v4(), computer_fd)),
        link_(io, link_fd,
              [this](std::uint32_t tag, Bytes body) { to_computer(tag, std::move(body)); }) {}

  // The computer's upgrade and the MCP handshake a switchboard does first, blocking.
  void attach() {
    beast::error_code error;
    ws_.next_layer().set_option(tcp::no_delay(true));
    ws_.read_message_max(kMaxMessageBytes);
    ws_.accept(error);
    if (error) die("computer upgrade: " + error.message());
    ws_.text(true);
    ws_.write(
        net::buffer(std::string_view(
            R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":)"
            R"("2025-06-18","capabilities":{},"clientInfo":{"name":"bare","version":"1"}}})")),
        error);
    beast::flat_buffer answer;
    if (!error) ws_.read(answer, error);
    if (!error)
      ws_.write(net::buffer(
                    std::string_view(R"({"jsonrpc":"2.0","method":"notifications/initialized"})")),
                error);
    if (error) die("computer handshake: " + error.message());
  }

  void start() {
    link_.start();
    read_computer();
  }

 private:
  void to_computer(std::uint32_t tag, Bytes body) {
    waiting_.push_back(tag);
    outbox_.push_back(std::move(body));
    if (outbox_.size() == 1) write_computer();
  }

  void write_computer() {
    ws_.async_write(net::buffer(outbox_.front().data.get(), outbox_.front().size),
                    [this](beast::error_code error, std::size_t) {
                      if (error) die("computer write: " + error.message());
                      outbox_.pop_front();
                      if (!outbox_.empty()) write_computer();
                    });
  }

  void read_computer() {
    incoming_ = link_.take_spare();
    ws_.async_read(incoming_, [this](beast::error_code error, std::size_t) {
      if (error) die("computer read: " + error.message());
      if (waiting_.empty()) die("the computer sent a message nobody asked for");
      link_.send(waiting_.front(), std::move(incoming_));
      waiting_.pop_front();
      read_computer();
    });
  }

  websocket::stream<tcp::socket> ws_;
  Link link_;
  std::deque<Bytes> outbox_;
  std::deque<std::uint32_t> waiting_;
  beast::flat_buffer incoming_;
};

// ---- the front: the callers' HTTP ----

class Front;

class CallerConnection : public std::enable_shared_from_this<CallerConnection> {
 public:
  CallerConnection(tcp::socket socket, Front& front) : socket_(std::move(socket)), front_(front) {}
  void read();
  void answer(Bytes reply);

 private:
  tcp::socket socket_;
  Front& front_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::string head_;
  Bytes reply_;
};

class Front {
 public:
  Front(net::io_context& io, int listener_fd, const std::vector<int>& link_fds)
      : acceptor_(io, tcp::v4(), listener_fd) {
    for (int fd : link_fds) {
      links_.push_back(std::make_unique<Link>(io, fd, [this](std::uint32_t tag, Bytes reply) {
        const auto found = waiting_.find(tag);
        if (found == waiting_.end()) die("a reply for no caller");
        auto caller = std::move(found->second);
        waiting_.erase(found);
        caller->answer(std::move(reply));
      }));
    }
  }

  void start() {
    for (auto& link : links_) link->start();
    accept();
  }

  // The body of `caller`'s request to the back its target names.
  void forward(std::shared_ptr<CallerConnection> caller, std::string_view target,
               std::string body) {
    std::size_t computer = 0;
    if (target.starts_with("/mcp/c"))
      std::from_chars(target.data() + 6, target.data() + target.size(), computer);
    const std::uint32_t tag = next_tag_++;
    waiting_.emplace(tag, std::move(caller));
    links_[computer % links_.size()]->send(tag, std::move(body));
  }

 private:
  void accept() {
    acceptor_.async_accept([this](beast::error_code error, tcp::socket socket) {
      if (error) die("accept: " + error.message());
      socket.set_option(tcp::no_delay(true));
      std::make_shared<CallerConnection>(std::move(socket), *this)->read();
      accept();
    });
  }

  tcp::acceptor acceptor_;
  std::vector<std::unique_ptr<Link>> links_;
  std::unordered_map<std::uint32_t, std::shared_ptr<CallerConnection>> waiting_;
  std::uint32_t next_tag_ = 0;
};

void CallerConnection::read() {
  parser_.emplace();
  http::async_read(socket_, buffer_, *parser_,
                   [self = shared_from_this()](beast::error_code error, std::size_t) {
                     if (error) return;  // the caller left
                     auto request = self->parser_->release();
                     self->front_.forward(self, request.target(), std::move(request.body()));
                   });
}

void CallerConnection::answer(Bytes reply) {
  reply_ = std::move(reply);
  head_ = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
          std::to_string(reply_.size) + "\r\n\r\n";
  const std::array parts{net::buffer(head_), net::buffer(reply_.data.get(), reply_.size)};
  net::async_write(socket_, parts,
                   [self = shared_from_this()](beast::error_code error, std::size_t) {
                     if (error) return;
                     self->reply_ = Bytes();
                     self->read();
                   });
}

// ---- start-up ----

int listen_on(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int on = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(fd, 1024) != 0)
    die("cannot listen on port " + std::to_string(port));
  return fd;
}

int number(const char* text) {
  int value = 0;
  const auto [end, error] = std::from_chars(text, text + std::strlen(text), value);
  if (error != std::errc() || *end != '\0' || value <= 0) die(std::string("not a number: ") + text);
  return value;
}

// The back for one accepted computer, in a child of its own. Returns in the parent only.
void fork_back(int computer_fd, std::vector<int>& link_fds, const std::vector<int>& listeners) {
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) die("socketpair");
  const pid_t child = ::fork();
  if (child < 0) die("fork");
  if (child == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    for (int fd : listeners) ::close(fd);
    for (int fd : link_fds) ::close(fd);  // the front's ends of the other backs' links
    ::close(pair[0]);
    net::io_context io{1};
    Back back(io, pair[1], computer_fd);
    back.attach();
    back.start();
    io.run();
    std::_Exit(0);
  }
  ::close(computer_fd);
  ::close(pair[1]);
  link_fds.push_back(pair[0]);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: switchboard-bare-relay CALLER_PORT COMPUTER_PORT COMPUTERS\n";
    return 2;
  }
  std::signal(SIGPIPE, SIG_IGN);
  const int callers = listen_on(number(argv[1]));
  const int computers = listen_on(number(argv[2]));
  std::cout << "listening" << std::endl;
  std::vector<int> link_fds;
  for (int k = number(argv[3]); k > 0; --k) {
    const int computer = ::accept4(computers, nullptr, nullptr, SOCK_CLOEXEC);
    if (computer < 0) die("accept a computer");
    fork_back(computer, link_fds, {callers, computers});
  }
  ::close(computers);
  net::io_context io{1};
  Front front(io, callers, link_fds);
  front.start();
  io.run();
  return 0;
}
