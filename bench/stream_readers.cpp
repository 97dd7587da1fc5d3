#include "bench/stream_readers.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <stdexcept>

namespace sbbench {

StreamReaders::StreamReaders(int port, const std::string& token, const std::string& computer,
                             int count, std::string counted_text)
    : counted_text_(std::move(counted_text)) {
  streams_.reserve(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    Stream& stream = streams_.emplace_back();
    stream.socket = std::make_unique<harness::RawSocket>(port);
    const std::string request = "GET /mcp/" + computer + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
                                "Authorization: Bearer " + token +
                                "\r\nAccept: text/event-stream\r\n"
                                "MCP-Protocol-Version: 2025-11-25\r\n"
                                "Mcp-Session-Id: fan-out-" +
                                std::to_string(i) + "\r\n\r\n";
    if (!stream.socket->send_all(request) ||
        !stream.socket->read_until("\r\n\r\n", std::chrono::seconds(10)))
      throw std::runtime_error("stream " + std::to_string(i) + " got no answer");
    const std::string received = stream.socket->take_read();
    const std::size_t head_end = received.find("\r\n\r\n") + 4;
    if (!received.starts_with("HTTP/1.1 200"))
      throw std::runtime_error("stream " + std::to_string(i) +
                               " was answered: " + received.substr(0, received.find("\r\n")));
    count_in(stream, received.data() + head_end, received.size() - head_end);
  }
  open_.store(count);
  thread_ = std::thread([this] { read_all(); });
}

StreamReaders::~StreamReaders() {
  stopping_.store(true);
  thread_.join();
}

// Every stream read as soon as it has bytes; a poll wakes at least every 100 ms to see
// whether the readers are stopping.
void StreamReaders::read_all() {
  std::vector<pollfd> polled(streams_.size());
  std::vector<char> buffer(256 * 1024);
  while (!stopping_.load()) {
    for (std::size_t i = 0; i < streams_.size(); ++i) {
      const int fd = streams_[i].ended ? -1 : streams_[i].socket->fd();  // -1: not polled
      polled[i] = pollfd{.fd = fd, .events = POLLIN, .revents = 0};
    }
    if (::poll(polled.data(), polled.size(), 100) <= 0) continue;
    for (std::size_t i = 0; i < streams_.size(); ++i) {
      if (polled[i].revents != 0) read_one(streams_[i], buffer);
    }
  }
}

void StreamReaders::read_one(Stream& stream, std::vector<char>& buffer) {
  for (;;) {
    const auto got = ::recv(stream.socket->fd(), buffer.data(), buffer.size(), MSG_DONTWAIT);
    if (got > 0) {
      count_in(stream, buffer.data(), static_cast<std::size_t>(got));
      continue;
    }
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    stream.ended = true;
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
