#include "harness/fixed_http_origin.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>

namespace harness {
namespace {

constexpr int kPollMs = 100;
constexpr std::size_t kMaxRequestHead = 16 * 1024;

}  // namespace

FixedHttpOrigin::FixedHttpOrigin(std::string json_body)
    : response_("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                std::to_string(json_body.size()) + "\r\nConnection: close\r\n\r\n" + json_body) {
  listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
      ::listen(listener_, 16) != 0 ||
      ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    if (listener_ >= 0) ::close(listener_);
    throw std::runtime_error("FixedHttpOrigin: cannot listen on loopback");
  }
  port_ = ntohs(address.sin_port);
  thread_ = std::thread([this] { serve(); });
}

FixedHttpOrigin::~FixedHttpOrigin() {
  stopping_ = true;
  thread_.join();
  ::close(listener_);
}

std::string FixedHttpOrigin::url(const std::string& path) const {
  return "http://127.0.0.1:" + std::to_string(port_) + path;
}

void FixedHttpOrigin::serve() {
  while (!stopping_) {
    pollfd ready{listener_, POLLIN, 0};
    if (::poll(&ready, 1, kPollMs) <= 0) continue;
    const int connection = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (connection < 0) continue;
    answer(connection);
    ::close(connection);
  }
}

// Reads the request's head (a GET has no body) and writes the one response.
void FixedHttpOrigin::answer(int connection) {
  std::string head;
  char buffer[4096];
  while (head.find("\r\n\r\n") == std::string::npos && head.size() < kMaxRequestHead) {
    pollfd readable{connection, POLLIN, 0};
    if (::poll(&readable, 1, 10 * kPollMs) <= 0) return;
    const ssize_t got = ::read(connection, buffer, sizeof buffer);
    if (got <= 0) return;
    head.append(buffer, static_cast<std::size_t>(got));
  }
  std::size_t written = 0;
  while (written < response_.size()) {
    const ssize_t sent =
        ::send(connection, response_.data() + written, response_.size() - written, MSG_NOSIGNAL);
    if (sent <= 0) return;
    written += static_cast<std::size_t>(sent);
  }
  ++answered_;
}

}  // namespace harness
