// The supervisor's outbound HTTP(S) client (supervisor/outbound/http_client.hpp) against
// servers in this process on loopback: a request and its response, Retry-After read, a
// response past the size bound, a server that never answers ended by the deadline, and https://
// with the certificate checked against the authorities given and no other.
#include "supervisor/outbound/http_client.hpp"

#include <gtest/gtest.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <optional>

#include "harness/process.hpp"
#include "harness/test_pki.hpp"
#include "shared/tls_client.hpp"

namespace sb::supervisor {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
constexpr auto kAwait = net::as_tuple(net::use_awaitable);

// One connection accepted on loopback and answered by `answer` (or never, when it gives
// nothing), over TLS when `tls` is set.
class OneShotServer {
 public:
  using Answer = std::function<std::optional<http::response<http::string_body>>(
      const http::request<http::string_body>&)>;

  OneShotServer(net::io_context& io, Answer answer, net::ssl::context* tls = nullptr)
      : acceptor_(io, {net::ip::make_address("127.0.0.1"), 0}), answer_(std::move(answer)) {
    net::co_spawn(io, serve(tls), net::detached);
  }
  int port() const { return acceptor_.local_endpoint().port(); }
  const http::request<http::string_body>& received() const { return received_; }

 private:
  net::awaitable<void> serve(net::ssl::context* tls) {
    auto [error, socket] = co_await acceptor_.async_accept(kAwait);
    if (error) co_return;
    if (!tls) co_return co_await exchange(socket);
    beast::ssl_stream<tcp::socket> stream(std::move(socket), *tls);
    const auto [handshake] = co_await stream.async_handshake(net::ssl::stream_base::server, kAwait);
    if (!handshake) co_await exchange(stream);
  }
  template <class Stream>
  net::awaitable<void> exchange(Stream& stream) {
    beast::flat_buffer buffer;
    const auto [read_error, read] = co_await http::async_read(stream, buffer, received_, kAwait);
    if (read_error) co_return;
    auto response = answer_(received_);
    if (!response) {
      held_ = std::make_shared<Stream>(std::move(stream));  // silent, and kept open
      co_return;
    }
    response->prepare_payload();
    co_await http::async_write(stream, *response, kAwait);
  }

  tcp::acceptor acceptor_;
  Answer answer_;
  http::request<http::string_body> received_;
  std::shared_ptr<void> held_;
};

http::response<http::string_body> ok(std::string body) {
  http::response<http::string_body> response{http::status::ok, 11};
  response.set(http::field::content_type, "application/json");
  response.body() = std::move(body);
  return response;
}

std::variant<OutboundResponse, std::string> send(net::io_context& io, OutboundClient& client,
                                                 OutboundRequest request) {
  std::optional<std::variant<OutboundResponse, std::string>> result;
  net::co_spawn(
      io, [&]() -> net::awaitable<void> { result = co_await client.send(std::move(request)); },
      net::detached);
  io.run_for(std::chrono::seconds(20));
  io.restart();
  EXPECT_TRUE(result) << "send() never finished";
  return result ? *result : std::string("never finished");
}

std::string failure_of(const std::variant<OutboundResponse, std::string>& result) {
  const auto* failure = std::get_if<std::string>(&result);
  return failure ? *failure : "";
}

TEST(OutboundClient, SendsTheRequestAndReadsTheResponse) {
  net::io_context io;
  OneShotServer server(io, [](const auto&) { return ok(R"({"keys":[]})"); });
  OutboundClient client(io, nullptr);
  const auto result =
      send(io, client,
           {.method = "POST",
            .url = "http://127.0.0.1:" + std::to_string(server.port()) + "/v1/traces?x=1",
            .headers = {{"content-type", "application/json"}, {"api-key", "s3cret"}},
            .body = "{}"});
  ASSERT_TRUE(std::holds_alternative<OutboundResponse>(result)) << failure_of(result);
  const auto& response = std::get<OutboundResponse>(result);
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.content_type, "application/json");
  EXPECT_EQ(response.body, R"({"keys":[]})");
  EXPECT_EQ(server.received().method(), http::verb::post);
  EXPECT_EQ(server.received().target(), "/v1/traces?x=1");
  EXPECT_EQ(server.received()["api-key"], "s3cret");
  EXPECT_EQ(server.received().body(), "{}");
}

TEST(OutboundClient, ReadsRetryAfterWhenItIsANumberOfSeconds) {
  for (const auto& [header, expected] :
       std::vector<std::pair<std::string, std::optional<std::chrono::seconds>>>{
           {"7", std::chrono::seconds(7)},
           {"0", std::chrono::seconds(0)},
           {"Wed, 21 Oct 2026 07:28:00 GMT", std::nullopt},
           {"-3", std::nullopt},
           {"12345678901234567890", std::nullopt}}) {
    net::io_context io;
    OneShotServer server(io, [header = header](const auto&) {
      auto response = ok("{}");
      response.result(http::status::service_unavailable);
      response.set(http::field::retry_after, header);
      return std::optional(response);
    });
    OutboundClient client(io, nullptr);
    const auto result =
        send(io, client, {.url = "http://127.0.0.1:" + std::to_string(server.port()) + "/"});
    ASSERT_TRUE(std::holds_alternative<OutboundResponse>(result)) << failure_of(result);
    EXPECT_EQ(std::get<OutboundResponse>(result).status, 503);
    EXPECT_EQ(std::get<OutboundResponse>(result).retry_after, expected) << header;
  }
}

TEST(OutboundClient, AResponsePastItsBoundIsRefusedWhole) {
  net::io_context io;
  OneShotServer server(io, [](const auto&) { return ok(std::string(64 * 1024, 'x')); });
  OutboundClient client(io, nullptr);
  const auto result = send(io, client,
                           {.url = "http://127.0.0.1:" + std::to_string(server.port()) + "/",
                            .max_response_bytes = 16 * 1024});
  EXPECT_NE(failure_of(result).find("larger than 16384 bytes"), std::string::npos)
      << failure_of(result);
}

TEST(OutboundClient, AServerThatNeverAnswersIsLeftAtTheDeadline) {
  net::io_context io;
  OneShotServer server(io, [](const auto&) { return std::nullopt; });
  OutboundClient client(io, nullptr);
  const auto result = send(io, client,
                           {.url = "http://127.0.0.1:" + std::to_string(server.port()) + "/",
                            .headers = {{"authorization", "Bearer hunter2"}},
                            .deadline = std::chrono::milliseconds(200)});
  EXPECT_NE(failure_of(result).find("reading the response"), std::string::npos)
      << failure_of(result);
  EXPECT_EQ(failure_of(result).find("hunter2"), std::string::npos);
}

TEST(OutboundClient, HttpsChecksTheCertificateAgainstTheAuthoritiesGiven) {
  const harness::TempDir dir("sb-outbound");
  const harness::TestPki pki = harness::make_test_pki(dir.path(), "DNS:localhost");
  net::ssl::context server_tls(net::ssl::context::tls_server);
  server_tls.use_certificate_chain_file(pki.server_certificate.string());
  server_tls.use_private_key_file(pki.server_key.string(), net::ssl::context::pem);

  net::io_context io;
  OneShotServer trusted(
      io, [](const auto&) { return ok("trusted"); }, &server_tls);
  OutboundClient client(io, make_tls_context(pki.ca_certificate));
  const auto result =
      send(io, client, {.url = "https://localhost:" + std::to_string(trusted.port()) + "/"});
  ASSERT_TRUE(std::holds_alternative<OutboundResponse>(result)) << failure_of(result);
  EXPECT_EQ(std::get<OutboundResponse>(result).body, "trusted");

  OneShotServer unknown(
      io, [](const auto&) { return ok("never"); }, &server_tls);
  OutboundClient system_only(io, make_tls_context());
  EXPECT_NE(failure_of(send(io, system_only,
                            {.url = "https://localhost:" + std::to_string(unknown.port()) + "/"}))
                .find("TLS with localhost"),
            std::string::npos);

  OutboundClient plain_only(io, nullptr);
  EXPECT_NE(failure_of(send(io, plain_only, {.url = "https://localhost:1/"}))
                .find("https:// is not set up here"),
            std::string::npos);
}

}  // namespace
}  // namespace sb::supervisor
