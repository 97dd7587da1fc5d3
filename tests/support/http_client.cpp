#include "tests/support/http_client.hpp"

#include <strings.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <stdexcept>

namespace sbtest {

namespace beast = boost::beast;
namespace bhttp = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using json = nlohmann::json;

std::optional<std::string> HttpResponse::header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (key.size() == name.size() && ::strncasecmp(key.data(), name.data(), name.size()) == 0)
      return value;
  }
  return std::nullopt;
}

json HttpResponse::json() const {
  return json::parse(body, nullptr, /*allow_exceptions=*/false);
}

struct HttpConnection::Impl {
  net::io_context io;
  beast::tcp_stream stream{io};
  beast::flat_buffer buffer;
  int port = 0;

  // Runs the io_context until `done` is set or `limit` passes; the stream's own expiry
  // makes a stuck operation complete with beast::error::timeout well before that.
  void run_until(const bool& done, std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit + std::chrono::seconds(5);
    while (!done) {
      io.restart();
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline) throw std::runtime_error("HTTP client: operation did not complete");
      io.run_one_for(deadline - now);
    }
  }

  bhttp::request<bhttp::string_body> build(const HttpRequest& request, bool keep_alive) const {
    bhttp::request<bhttp::string_body> out;
    out.version(11);
    out.method_string(request.method);
    out.target(request.target);
    out.set(bhttp::field::host, "127.0.0.1:" + std::to_string(port));
    if (request.token) out.set(bhttp::field::authorization, "Bearer " + *request.token);
    bool chunked = false;
    for (const auto& [name, value] : request.headers) {
      // "Transfer-Encoding: chunked" means: send the body in chunks (Beast encodes them).
      if (::strcasecmp(name.c_str(), "Transfer-Encoding") == 0 && value == "chunked") {
        chunked = true;
        continue;
      }
      out.insert(name, value);
    }
    out.body() = request.body;
    if (chunked) {
      out.chunked(true);
    } else if (!request.body.empty() || request.method == "POST" || request.method == "PUT") {
      out.prepare_payload();
    }
    out.keep_alive(keep_alive);
    return out;
  }

  static HttpResponse convert(const bhttp::response<bhttp::string_body>& response) {
    HttpResponse out;
    out.status = static_cast<int>(response.result_int());
    for (const auto& field : response) {
      out.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    }
    out.body = response.body();
    return out;
  }
};

HttpConnection::HttpConnection(int port, std::chrono::milliseconds connect_timeout)
    : impl_(std::make_unique<Impl>()) {
  impl_->port = port;
  const tcp::endpoint endpoint(net::ip::make_address("127.0.0.1"),
                               static_cast<unsigned short>(port));
  bool done = false;
  beast::error_code result;
  impl_->stream.expires_after(connect_timeout);
  impl_->stream.async_connect(endpoint, [&](beast::error_code error) {
    result = error;
    done = true;
  });
  impl_->run_until(done, connect_timeout);
  if (result)
    throw std::runtime_error("HTTP client: connect to port " + std::to_string(port) + ": " +
                             result.message());
  impl_->stream.socket().set_option(tcp::no_delay(true));
}

HttpConnection::~HttpConnection() {
  close();
}

void HttpConnection::send(const HttpRequest& request, bool keep_alive,
                          std::chrono::milliseconds timeout) {
  auto message = impl_->build(request, keep_alive);
  bool done = false;
  beast::error_code result;
  impl_->stream.expires_after(timeout);
  bhttp::async_write(impl_->stream, message, [&](beast::error_code error, std::size_t) {
    result = error;
    done = true;
  });
  impl_->run_until(done, timeout);
  if (result) throw std::runtime_error("HTTP client: sending: " + result.message());
}

HttpResponse HttpConnection::read_response(std::chrono::milliseconds timeout, bool head_request) {
  bhttp::response_parser<bhttp::string_body> parser;
  parser.body_limit(64 * 1024 * 1024);
  parser.skip(head_request);
  bool done = false;
  beast::error_code result;
  impl_->stream.expires_after(timeout);
  bhttp::async_read(impl_->stream, impl_->buffer, parser,
                    [&](beast::error_code error, std::size_t) {
                      result = error;
                      done = true;
                    });
  impl_->run_until(done, timeout);
  if (result) throw std::runtime_error("HTTP client: reading the response: " + result.message());
  return Impl::convert(parser.get());
}

HttpResponse HttpConnection::request(const HttpRequest& request, bool keep_alive,
                                     std::chrono::milliseconds timeout) {
  // Written and read at the same time: a server may answer before it has read the whole
  // body (413) and close, which can fail the write; the answer is what matters.
  auto message = impl_->build(request, keep_alive);
  std::optional<bhttp::response_parser<bhttp::string_body>> parser;
  bool wrote = false;
  bool read = false;
  beast::error_code read_error;
  auto start_read = [&] {
    parser.emplace();
    parser->body_limit(64 * 1024 * 1024);
    parser->skip(request.method == "HEAD");
    read = false;
    bhttp::async_read(impl_->stream, impl_->buffer, *parser,
                      [&](beast::error_code error, std::size_t) {
                        read_error = error;
                        read = true;
                      });
  };
  impl_->stream.expires_after(timeout);
  bhttp::async_write(impl_->stream, message, [&](beast::error_code, std::size_t) { wrote = true; });
  start_read();
  impl_->run_until(read, timeout);
  // An interim "100 Continue" is not the answer: read on.
  while (!read_error && parser->get().result_int() / 100 == 1) {
    start_read();
    impl_->run_until(read, timeout);
  }
  if (!wrote) {
    beast::error_code ignored;
    impl_->stream.socket().cancel(ignored);
    impl_->run_until(wrote, timeout);
  }
  if (read_error) {
    throw std::runtime_error("HTTP client: " + request.method + " " + request.target + ": " +
                             read_error.message());
  }
  return Impl::convert(parser->get());
}

bool HttpConnection::wait_for_server_close(std::chrono::milliseconds timeout) {
  char byte = 0;
  bool done = false;
  beast::error_code result;
  std::size_t count = 0;
  impl_->stream.expires_after(timeout);
  impl_->stream.async_read_some(net::buffer(&byte, 1), [&](beast::error_code error, std::size_t n) {
    result = error;
    count = n;
    done = true;
  });
  impl_->run_until(done, timeout);
  return count == 0 && (result == net::error::eof || result == net::error::connection_reset);
}

void HttpConnection::close() {
  if (!impl_) return;
  beast::error_code ignored;
  impl_->stream.socket().close(ignored);
}

int HttpConnection::local_port() const {
  beast::error_code error;
  const auto endpoint = impl_->stream.socket().local_endpoint(error);
  return error ? 0 : endpoint.port();
}

HttpResponse http(int port, const HttpRequest& request, std::chrono::milliseconds timeout) {
  HttpConnection connection(port, timeout);
  return connection.request(request, /*keep_alive=*/false, timeout);
}

HttpResponse http_get(int port, std::string target, std::optional<std::string> token) {
  return http(port, HttpRequest{.method = "GET", .target = std::move(target), .token = token});
}

json rpc(const json& id, std::string_view method, std::optional<json> params) {
  json message{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}};
  if (params) message["params"] = *params;
  return message;
}

json tool_call(const json& id, std::string_view tool, std::optional<json> arguments) {
  json params{{"name", tool}};
  if (arguments) params["arguments"] = *arguments;
  return rpc(id, "tools/call", params);
}

HttpRequest mcp_request(std::string path, const std::string& token, const json& body) {
  return HttpRequest{.method = "POST",
                     .target = std::move(path),
                     .body = body.dump(),
                     .token = token,
                     .headers = {{"Content-Type", "application/json"},
                                 {"Accept", "application/json, text/event-stream"}}};
}

HttpResponse post_mcp(int port, std::string path, const std::string& token, const json& body,
                      std::chrono::milliseconds timeout) {
  return http(port, mcp_request(std::move(path), token, body), timeout);
}

namespace {
json json_reply(const HttpResponse& response, const std::string& what) {
  if (response.status != 200) {
    throw std::runtime_error(what + ": HTTP " + std::to_string(response.status) + " " +
                             response.body);
  }
  json parsed = response.json();
  if (parsed.is_discarded()) throw std::runtime_error(what + ": not JSON: " + response.body);
  return parsed;
}
}  // namespace

json call_tool(int port, std::string path, const std::string& token, std::string_view tool,
               std::optional<json> arguments, const json& id) {
  return json_reply(post_mcp(port, path, token, tool_call(id, tool, std::move(arguments))),
                    "tools/call " + std::string(tool) + " on " + path);
}

json list_tools(int port, std::string path, const std::string& token, const json& id) {
  return json_reply(post_mcp(port, path, token, rpc(id, "tools/list")), "tools/list on " + path);
}

std::vector<std::string> tool_names(const json& list_reply) {
  std::vector<std::string> names;
  for (const auto& tool : list_reply.at("result").at("tools"))
    names.push_back(tool.at("name").get<std::string>());
  return names;
}

std::string result_text(const json& reply) {
  return reply.at("result").at("content").at(0).at("text").get<std::string>();
}

}  // namespace sbtest
