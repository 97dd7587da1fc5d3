#include "harness/fixed_http_origin.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <stdexcept>
#include <string_view>
#include <vector>

namespace harness {
namespace {

constexpr int kPollMs = 100;
constexpr std::size_t kMaxRequest = 4 * 1024 * 1024;

// The Content-Length a request's head announces; 0 for none.
std::size_t content_length(std::string_view head) {
  std::string lower(head);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const auto at = lower.find("\r\ncontent-length:");
  if (at == std::string::npos) return 0;
  return static_cast<std::size_t>(std::strtoull(lower.c_str() + at + 17, nullptr, 10));
}

}  // namespace

FixedHttpOrigin::FixedHttpOrigin(std::string json_body, int status)
    : response_("HTTP/1.1 " + std::to_string(status) +
                " Fixed\r\nContent-Type: application/json\r\nContent-Length: " +
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

std::string FixedHttpOrigin::last_request() const {
  const std::lock_guard lock(last_mutex_);
  return last_request_;
}

// Reads the request (its head, and the body its Content-Length announces) and writes the
// one response.
void FixedHttpOrigin::answer(int connection) {
  std::string request;
  std::vector<char> buffer(64 * 1024);
  std::size_t wanted = std::string::npos;
  while (request.size() < wanted && request.size() < kMaxRequest) {
    pollfd readable{connection, POLLIN, 0};
    if (::poll(&readable, 1, 10 * kPollMs) <= 0) return;
    const ssize_t got = ::read(connection, buffer.data(), buffer.size());
    if (got <= 0) return;
    request.append(buffer.data(), static_cast<std::size_t>(got));
    // The head is looked for until found, not again through a large body (a batch of spans)
    // at every read.
    if (wanted != std::string::npos) continue;
    const auto head_end = request.find("\r\n\r\n");
    if (head_end != std::string::npos)
      wanted = head_end + 4 + content_length(std::string_view(request).substr(0, head_end));
  }
  {
    const std::lock_guard lock(last_mutex_);
    last_request_ = request;
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
