// HttpPoller (callers.hpp): one blocking keep-alive connection, for polling routes and for
// the soak's callers.
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <optional>
#include <string>
#include <utility>

#include "base/asio_names.hpp"
#include "bench/callers.hpp"

namespace sbbench {

using namespace sb::asio_names;

struct HttpPoller::Impl {
  net::io_context io;
  std::optional<beast::tcp_stream> stream;
  beast::flat_buffer buffer;
  int port = 0;
  std::string authorization;
};

HttpPoller::HttpPoller(int port, std::string token) : impl_(std::make_unique<Impl>()) {
  impl_->port = port;
  impl_->authorization = "Bearer " + token;
}

HttpPoller::~HttpPoller() = default;

std::optional<std::pair<int, std::string>> HttpPoller::get(const std::string& target) {
  return exchange(static_cast<int>(http::verb::get), target, {});
}

std::optional<std::pair<int, std::string>> HttpPoller::post(const std::string& target,
                                                            std::string body) {
  return exchange(static_cast<int>(http::verb::post), target, std::move(body));
}

std::optional<std::pair<int, std::string>> HttpPoller::exchange(int verb, const std::string& target,
                                                                std::string body) {
  beast::error_code error;
  if (!impl_->stream) {
    impl_->stream.emplace(impl_->io);
    impl_->buffer.clear();
    impl_->stream->connect(
        tcp::endpoint(net::ip::address_v4::loopback(), static_cast<unsigned short>(impl_->port)),
        error);
    if (error) {
      impl_->stream.reset();
      return std::nullopt;
    }
  }
  http::request<http::string_body> request{static_cast<http::verb>(verb), target, 11};
  request.set(http::field::host, "127.0.0.1:" + std::to_string(impl_->port));
  request.set(http::field::authorization, impl_->authorization);
  if (!body.empty()) {
    request.set(http::field::content_type, "application/json");
    request.set(http::field::accept, "application/json, text/event-stream");
    request.body() = std::move(body);
    request.prepare_payload();
  }
  request.keep_alive(true);
  http::write(*impl_->stream, request, error);
  http::response<http::string_body> response;
  if (!error) http::read(*impl_->stream, impl_->buffer, response, error);
  if (error || !response.keep_alive()) impl_->stream.reset();
  if (error) return std::nullopt;
  return std::make_pair(static_cast<int>(response.result_int()), std::move(response.body()));
}

}  // namespace sbbench
