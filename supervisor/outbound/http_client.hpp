// The supervisor's one outbound HTTP(S) client: a request to a server the configuration
// names (an OAuth issuer's keys, an OpenTelemetry collector), on the supervisor's one loop,
// bounded in time and size, TLS verified as every dial of the project is
// (shared/tls_client.hpp). One request per connection: what it fetches is rare and small.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace sb::supervisor {

struct OutboundRequest {
  std::string method = "GET";
  std::string url;  // http:// or https://
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // The whole exchange (resolve, connect, TLS, request, response) within this.
  std::chrono::milliseconds deadline{10'000};
  std::size_t max_response_bytes = 1024 * 1024;  // head and body together
};

struct OutboundResponse {
  int status = 0;
  std::string content_type;
  std::string body;
  // How long the server asks to be left alone (Retry-After as delay-seconds, RFC 9110
  // §10.2.3); an HTTP date is not read.
  std::optional<std::chrono::seconds> retry_after;
};

class OutboundClient {
 public:
  // `tls`: the context for https:// (shared/tls_client.hpp); null refuses https://.
  OutboundClient(boost::asio::io_context& io, std::shared_ptr<boost::asio::ssl::context> tls);

  // The response, or what went wrong in a sentence that names the server but never a
  // header's value (they may be credentials).
  boost::asio::awaitable<std::variant<OutboundResponse, std::string>> send(OutboundRequest request);

 private:
  boost::asio::io_context& io_;
  std::shared_ptr<boost::asio::ssl::context> tls_;
};

}  // namespace sb::supervisor
