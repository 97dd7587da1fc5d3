#include "supervisor/outbound/http_client.hpp"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <limits>
#include <optional>
#include <string_view>

#include "shared/dial_target.hpp"
#include "shared/tls_client.hpp"

namespace sb::supervisor {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using Result = std::variant<OutboundResponse, std::string>;
constexpr auto kAwait = net::as_tuple(net::use_awaitable);

http::request<http::string_body> request_for(const OutboundRequest& request,
                                             const DialTarget& target) {
  http::request<http::string_body> out;
  out.method_string(request.method);
  out.target(target.target);
  out.version(11);
  out.set(http::field::host, target.host_header);
  out.set(http::field::connection, "close");
  for (const auto& [name, value] : request.headers) out.set(name, value);
  out.body() = request.body;
  out.prepare_payload();
  return out;
}

// Retry-After as delay-seconds: digits only, and few enough to be a number of seconds.
std::optional<std::chrono::seconds> delay_seconds(std::string_view value) {
  constexpr std::size_t kMaxDigits = 9;
  if (value.empty() || value.size() > kMaxDigits ||
      !std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  return std::chrono::seconds(std::stol(std::string(value)));
}

// The exchange on a connected stream (TCP or TLS): the request out, the response in,
// within the stream's deadline and `max_bytes`.
template <class Stream>
net::awaitable<Result> exchange(Stream& stream, const OutboundRequest& request,
                                const DialTarget& target) {
  const std::string server = target.host_header;
  auto message = request_for(request, target);
  const auto [write_error, written] = co_await http::async_write(stream, message, kAwait);
  if (write_error) co_return server + ": sending the request: " + write_error.message();
  beast::flat_buffer buffer(request.max_response_bytes);
  http::response_parser<http::string_body> parser;
  parser.header_limit(static_cast<std::uint32_t>(std::min<std::size_t>(
      request.max_response_bytes, std::numeric_limits<std::uint32_t>::max())));
  parser.body_limit(request.max_response_bytes);
  const auto [read_error, read] = co_await http::async_read(stream, buffer, parser, kAwait);
  if (read_error == http::error::body_limit || read_error == http::error::header_limit ||
      read_error == http::error::buffer_overflow)
    co_return server + ": the response is larger than " +
        std::to_string(request.max_response_bytes) + " bytes";
  if (read_error) co_return server + ": reading the response: " + read_error.message();
  auto& response = parser.get();
  co_return OutboundResponse{.status = static_cast<int>(response.result_int()),
                             .content_type = std::string(response[http::field::content_type]),
                             .body = std::move(response.body()),
                             .retry_after = delay_seconds(response[http::field::retry_after])};
}

}  // namespace

OutboundClient::OutboundClient(net::io_context& io, std::shared_ptr<net::ssl::context> tls)
    : io_(io), tls_(std::move(tls)) {}

net::awaitable<Result> OutboundClient::send(OutboundRequest request) {
  auto parsed = parse_dial_target(request.url, UrlKind::kHttp);
  if (const auto* problem = std::get_if<std::string>(&parsed)) co_return "url " + *problem;
  const DialTarget target = std::get<DialTarget>(std::move(parsed));
  const std::string server = target.host_header;
  if (target.tls && !tls_) co_return server + ": https:// is not set up here";

  beast::tcp_stream tcp(io_);
  tcp.expires_after(request.deadline);  // resolving is bounded below by the same deadline
  tcp::resolver resolver(io_);
  net::steady_timer resolve_deadline(io_, request.deadline);
  resolve_deadline.async_wait([&resolver](boost::system::error_code error) {
    if (!error) resolver.cancel();
  });
  const auto [resolve_error, addresses] =
      co_await resolver.async_resolve(target.host, target.port, kAwait);
  resolve_deadline.cancel();
  if (resolve_error) co_return server + ": resolving: " + resolve_error.message();
  const auto [connect_error, peer] = co_await tcp.async_connect(addresses, kAwait);
  if (connect_error) co_return server + ": connecting: " + connect_error.message();
  if (!target.tls) co_return co_await exchange(tcp, request, target);

  beast::ssl_stream<beast::tcp_stream> tls(std::move(tcp), *tls_);
  SSL* handle = tls.native_handle();
  if (auto problem = prepare_tls(handle, target.host); !problem.empty()) co_return problem;
  const auto [handshake_error] =
      co_await tls.async_handshake(net::ssl::stream_base::client, kAwait);
  if (handshake_error) co_return tls_failure(handle, server, handshake_error);
  co_return co_await exchange(tls, request, target);
}

}  // namespace sb::supervisor
