#include "harness/http_client.hpp"

#include <strings.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <stdexcept>

namespace harness {

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

bool HttpResponse::is_event_stream() const {
  const auto type = header("Content-Type");
  if (!type) return false;
  const std::string_view media = std::string_view(*type).substr(0, type->find(';'));
  constexpr std::string_view kEventStream = "text/event-stream";
  std::size_t start = media.find_first_not_of(' ');
  if (start == std::string_view::npos) return false;
  std::string_view trimmed = media.substr(start);
  while (!trimmed.empty() && trimmed.back() == ' ') trimmed.remove_suffix(1);
  return trimmed.size() == kEventStream.size() &&
         ::strncasecmp(trimmed.data(), kEventStream.data(), kEventStream.size()) == 0;
}

json HttpResponse::final_message() const {
  if (!is_event_stream()) return this->json();
  auto messages = sse_messages(body);
  if (messages.empty()) return nlohmann::json(nlohmann::json::value_t::discarded);
  return std::move(messages.back());
}

// ---- event streams ----

json SseEvent::json() const {
  return json::parse(data, nullptr, /*allow_exceptions=*/false);
}

namespace {

// The next complete event in text[pos...]; on success `pos` moves past it (and past any
// blank or comment-only blocks before it). A line ends with CRLF, LF or CR.
std::optional<SseEvent> take_sse_event(std::string_view text, std::size_t& pos) {
  SseEvent event;
  bool has_data = false;
  std::size_t cursor = pos;
  std::size_t block_start = pos;
  std::size_t block_end = pos;
  for (;;) {
    const std::size_t eol = text.find_first_of("\r\n", cursor);
    if (eol == std::string_view::npos) return std::nullopt;
    std::size_t next = eol + 1;
    if (text[eol] == '\r') {
      if (eol + 1 >= text.size()) return std::nullopt;  // CR or CRLF: not known yet
      if (text[eol + 1] == '\n') next = eol + 2;
    }
    const std::string_view line = text.substr(cursor, eol - cursor);
    cursor = next;
    if (line.empty()) {
      if (has_data) {
        if (!event.data.empty() && event.data.back() == '\n') event.data.pop_back();
        event.raw = std::string(text.substr(block_start, block_end - block_start));
        pos = next;
        return event;
      }
      event = SseEvent{};  // nothing to dispatch: start over after the blank line
      block_start = next;
      continue;
    }
    block_end = eol;
    if (line.front() == ':') continue;  // a comment
    const std::size_t colon = line.find(':');
    const std::string_view name = line.substr(0, colon);
    std::string_view value =
        colon == std::string_view::npos ? std::string_view() : line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    if (name == "event") {
      event.event = std::string(value);
    } else if (name == "data") {
      event.data += value;
      event.data += '\n';
      has_data = true;
    } else if (name == "id") {
      event.id = std::string(value);
    } else if (name == "retry") {
      event.retry = std::string(value);
    }
  }
}

}  // namespace

std::vector<SseEvent> parse_sse(std::string_view body) {
  std::vector<SseEvent> events;
  std::size_t pos = 0;
  while (auto event = take_sse_event(body, pos)) events.push_back(std::move(*event));
  return events;
}

std::vector<json> sse_messages(std::string_view body) {
  std::vector<json> messages;
  for (const auto& event : parse_sse(body)) {
    if (!event.data.empty()) messages.push_back(event.json());
  }
  return messages;
}

struct HttpConnection::Impl {
  net::io_context io;
  beast::tcp_stream stream{io};
  beast::flat_buffer buffer;
  int port = 0;
  // The answer being read as it arrives (read_head, next_event, read_rest).
  std::optional<bhttp::response_parser<bhttp::string_body>> incoming;
  std::size_t events_taken = 0;  // characters of its body already returned as events

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

  // Starts one operation (`start` is given its completion handler) and runs it to its end
  // within `timeout`, the stream's expiry; its error code.
  template <class Start>
  beast::error_code complete(std::chrono::milliseconds timeout, Start start) {
    bool done = false;
    beast::error_code result;
    stream.expires_after(timeout);
    start([&](beast::error_code error, auto&&...) {
      result = error;
      done = true;
    });
    run_until(done, timeout);
    return result;
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
  const beast::error_code result = impl_->complete(connect_timeout, [&](auto handler) {
    impl_->stream.async_connect(endpoint, std::move(handler));
  });
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
  const beast::error_code result = impl_->complete(timeout, [&](auto handler) {
    bhttp::async_write(impl_->stream, message, std::move(handler));
  });
  if (result) throw std::runtime_error("HTTP client: sending: " + result.message());
}

HttpResponse HttpConnection::read_response(std::chrono::milliseconds timeout, bool head_request) {
  bhttp::response_parser<bhttp::string_body> parser;
  parser.body_limit(64 * 1024 * 1024);
  parser.skip(head_request);
  const beast::error_code result = impl_->complete(timeout, [&](auto handler) {
    bhttp::async_read(impl_->stream, impl_->buffer, parser, std::move(handler));
  });
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

HttpResponse HttpConnection::read_head(std::chrono::milliseconds timeout) {
  impl_->incoming.emplace();
  impl_->incoming->body_limit(64 * 1024 * 1024);
  impl_->events_taken = 0;
  const beast::error_code result = impl_->complete(timeout, [&](auto handler) {
    bhttp::async_read_header(impl_->stream, impl_->buffer, *impl_->incoming, std::move(handler));
  });
  if (result) {
    impl_->incoming.reset();
    throw std::runtime_error("HTTP client: reading the response head: " + result.message());
  }
  HttpResponse head = Impl::convert(impl_->incoming->get());
  head.body.clear();
  return head;
}

std::optional<SseEvent> HttpConnection::next_event(std::chrono::milliseconds timeout) {
  if (!impl_->incoming) throw std::runtime_error("HTTP client: next_event() before read_head()");
  auto& parser = *impl_->incoming;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    std::size_t pos = impl_->events_taken;
    if (auto event = take_sse_event(parser.get().body(), pos)) {
      impl_->events_taken = pos;
      return event;
    }
    if (parser.is_done()) return std::nullopt;
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      close();
      throw std::runtime_error("HTTP client: no event and no end of the body within " +
                               std::to_string(timeout.count()) +
                               " ms; so far: " + parser.get().body());
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    const beast::error_code result = impl_->complete(left, [&](auto handler) {
      bhttp::async_read_some(impl_->stream, impl_->buffer, parser, std::move(handler));
    });
    if (result == beast::error::timeout) {
      close();
      throw std::runtime_error("HTTP client: no event and no end of the body within " +
                               std::to_string(timeout.count()) +
                               " ms; so far: " + parser.get().body());
    }
    if (result) {
      throw std::runtime_error("HTTP client: reading an event stream: " + result.message() +
                               "; so far: " + parser.get().body());
    }
  }
}

HttpResponse HttpConnection::read_rest(std::chrono::milliseconds timeout) {
  if (!impl_->incoming) throw std::runtime_error("HTTP client: read_rest() before read_head()");
  auto& parser = *impl_->incoming;
  if (!parser.is_done()) {
    const beast::error_code result = impl_->complete(timeout, [&](auto handler) {
      bhttp::async_read(impl_->stream, impl_->buffer, parser, std::move(handler));
    });
    if (result) {
      throw std::runtime_error("HTTP client: reading the rest of the body: " + result.message() +
                               "; so far: " + parser.get().body());
    }
  }
  HttpResponse whole = Impl::convert(parser.get());
  impl_->incoming.reset();
  impl_->events_taken = 0;
  return whole;
}

bool HttpConnection::body_complete() const {
  return impl_->incoming && impl_->incoming->is_done();
}

bool HttpConnection::wait_for_server_close(std::chrono::milliseconds timeout) {
  char byte = 0;
  const beast::error_code result = impl_->complete(timeout, [&](auto handler) {
    impl_->stream.async_read_some(net::buffer(&byte, 1), std::move(handler));
  });
  return result == net::error::eof || result == net::error::connection_reset;
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

std::string mcp_post_head(const std::string& path, const std::string& token,
                          std::size_t content_length, const std::string& extra) {
  return "POST " + path + " HTTP/1.1\r\nHost: switchboard\r\nAuthorization: Bearer " + token +
         "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n" +
         extra + "Content-Length: " + std::to_string(content_length) + "\r\n\r\n";
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
  // A caller that accepts event streams may be answered with one: the reply is its last event.
  json parsed = response.final_message();
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

}  // namespace harness
