#include "bench/stream_readers.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <stdexcept>
#include <string_view>

namespace sbbench {
namespace {

// A connected, blocking socket to 127.0.0.1:`port` whose reads give up after `seconds`.
int connect_loopback(int port, int seconds) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("socket() failed");
  const timeval timeout{.tv_sec = seconds, .tv_usec = 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    throw std::runtime_error("cannot connect to the switchboard");
  }
  return fd;
}

bool send_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const auto sent = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (sent <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(sent));
  }
  return true;
}

// Reads up to the end of the response's head; what came after it is returned in `rest`.
std::string read_head(int fd, std::string& rest) {
  std::string received;
  char buffer[4096];
  for (;;) {
    const auto end = received.find("\r\n\r\n");
    if (end != std::string::npos) {
      rest = received.substr(end + 4);
      return received.substr(0, end + 4);
    }
    const auto got = ::recv(fd, buffer, sizeof buffer, 0);
    if (got <= 0) return received;
    received.append(buffer, static_cast<std::size_t>(got));
  }
}

}  // namespace

StreamReaders::StreamReaders(int port, const std::string& token, const std::string& computer,
                             int count, std::string counted_text)
    : counted_text_(std::move(counted_text)) {
  constexpr int kHeadSeconds = 10;
  streams_.reserve(static_cast<std::size_t>(count));
  try {
    for (int i = 0; i < count; ++i) {
      Stream& stream = streams_.emplace_back();
      stream.fd = connect_loopback(port, kHeadSeconds);
      const std::string request = "GET /mcp/" + computer + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
                                  "Authorization: Bearer " + token +
                                  "\r\nAccept: text/event-stream\r\n"
                                  "MCP-Protocol-Version: 2025-11-25\r\n"
                                  "Mcp-Session-Id: fan-out-" +
                                  std::to_string(i) + "\r\n\r\n";
      std::string rest;
      if (!send_all(stream.fd, request)) throw std::runtime_error("a stream's request failed");
      const std::string head = read_head(stream.fd, rest);
      if (!head.starts_with("HTTP/1.1 200"))
        throw std::runtime_error("stream " + std::to_string(i) +
                                 " was answered: " + head.substr(0, head.find("\r\n")));
      count_in(stream, rest.data(), rest.size());
      ::fcntl(stream.fd, F_SETFL, ::fcntl(stream.fd, F_GETFL) | O_NONBLOCK);
    }
  } catch (...) {
    for (const Stream& stream : streams_) ::close(stream.fd);
    throw;
  }
  open_.store(count);
  thread_ = std::thread([this] { read_all(); });
}

StreamReaders::~StreamReaders() {
  stopping_.store(true);
  thread_.join();
  for (const Stream& stream : streams_) {
    if (stream.fd >= 0) ::close(stream.fd);
  }
}

// Every stream read as soon as it has bytes; a poll wakes at least every 100 ms to see
// whether the readers are stopping.
void StreamReaders::read_all() {
  std::vector<pollfd> polled(streams_.size());
  std::vector<char> buffer(256 * 1024);
  while (!stopping_.load()) {
    for (std::size_t i = 0; i < streams_.size(); ++i)
      polled[i] = pollfd{.fd = streams_[i].fd, .events = POLLIN, .revents = 0};
    if (::poll(polled.data(), polled.size(), 100) <= 0) continue;
    for (std::size_t i = 0; i < streams_.size(); ++i) {
      if (polled[i].revents != 0) read_one(streams_[i], buffer);
    }
  }
}

void StreamReaders::read_one(Stream& stream, std::vector<char>& buffer) {
  for (;;) {
    const auto got = ::recv(stream.fd, buffer.data(), buffer.size(), 0);
    if (got > 0) {
      count_in(stream, buffer.data(), static_cast<std::size_t>(got));
      continue;
    }
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    ::close(stream.fd);  // ended by the switchboard: polled no more
    stream.fd = -1;
    open_.fetch_sub(1);
    return;
  }
}

// The text is counted where it ends, so one split across two reads counts once.
void StreamReaders::count_in(Stream& stream, const char* data, std::size_t size) {
  std::string window = std::move(stream.carry);
  window.append(data, size);
  long found = 0;
  for (auto at = window.find(counted_text_); at != std::string::npos;
       at = window.find(counted_text_, at + counted_text_.size())) {
    ++found;
  }
  counted_.fetch_add(found);
  const std::size_t keep = std::min(window.size(), counted_text_.size() - 1);
  stream.carry = window.substr(window.size() - keep);
}

}  // namespace sbbench
