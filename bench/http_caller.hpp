// A keep-alive HTTP/1.1 caller: the relay's request, to the switchboard, the bare relay or
// one of nginx's yardsticks. Included by callers.cpp alone.
#pragma once

#include <algorithm>
#include <boost/asio/read.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "bench/call_messages.hpp"
#include "bench/caller.hpp"
#include "harness/http_client.hpp"

namespace sbbench {

class HttpCaller final : public Caller {
 public:
  // `fixed_reply`: every reply must be exactly this (a yardstick's); else the relay's check.
  // `stateless`: a 2026-07-28 caller, its `_meta` and headers on each call.
  HttpCaller(net::io_context& io, int index, int port, std::string target, const std::string& token,
             std::shared_ptr<const std::string> fixed_reply = nullptr, bool stateless = false)
      : Caller(index),
        stream_(io),
        port_(port),
        target_(std::move(target)),
        authorization_("Bearer " + token),
        host_("127.0.0.1:" + std::to_string(port)),
        fixed_reply_(std::move(fixed_reply)),
        stateless_(stateless) {}

  net::awaitable<std::optional<std::string>> connect() {
    const auto [error] = co_await stream_.async_connect(
        tcp::endpoint(net::ip::address_v4::loopback(), static_cast<unsigned short>(port_)), kAwait);
    if (error) co_return transport_error("connect", error);
    stream_.socket().set_option(tcp::no_delay(true));
    co_return std::nullopt;
  }

  // A lean client, so that its own cost stays close to the direct caller's: no per-read
  // timer (Beast re-arms one per read when a deadline is set), Beast for the headers, then
  // the body read straight into storage kept from the last call (as the direct caller
  // keeps its read buffer; a fresh buffer would charge the caller's page faults to the
  // relay). The switchboard always sends Content-Length.
  net::awaitable<std::optional<std::string>> call(const CallSpec& spec) override {
    if (spec.progress) co_return co_await call_with_progress(spec);
    const std::uint64_t id = next_id_++;
    if (auto error = co_await post(request_body(index_, id, spec, stateless_), tool_of(spec)))
      co_return error;
    http::response_parser<http::empty_body> parser;
    parser.body_limit(kMaxResponseBytes);  // the body is read below, not by the parser
    const auto [read_error, read] =
        co_await http::async_read_header(stream_, buffer_, parser, kAwait);
    if (read_error) co_return transport_error("HTTP read", read_error);
    head_at_ = Clock::now();
    const auto length = parser.content_length();
    if (!length || *length > kMaxResponseBytes) {
      broken_ = true;
      co_return "HTTP response without a usable Content-Length";
    }
    const std::size_t size = *length;
    if (size > capacity_) {
      storage_ = std::make_unique_for_overwrite<char[]>(size);
      capacity_ = size;
    }
    const std::size_t buffered = std::min(buffer_.size(), size);
    net::buffer_copy(net::buffer(storage_.get(), buffered), buffer_.data());
    buffer_.consume(buffered);
    if (buffered < size) {
      const auto [body_error, got] = co_await net::async_read(
          stream_.socket(), net::buffer(storage_.get() + buffered, size - buffered), kAwait);
      if (body_error) co_return transport_error("HTTP read", body_error);
    }
    const std::string_view body(storage_.get(), size);
    const int status = parser.get().result_int();
    if (status != 200)
      co_return "HTTP " + std::to_string(status) + ": " + std::string(body.substr(0, 160));
    if (fixed_reply_) {
      if (body == *fixed_reply_) co_return std::nullopt;
      co_return "not the fixed reply: " + std::string(body.substr(0, 160));
    }
    co_return check_reply(body, index_, id, spec);
  }

  net::awaitable<std::optional<std::string>> hold(std::atomic<std::uint64_t>& id) override {
    id = next_id_++;
    http::response<http::string_body> response;
    if (auto error = co_await exchange(held_call_body(id), response)) co_return error;
    const json reply = json::parse(response.body(), nullptr, false);
    if (response.result_int() != 200 || !reply.is_object() || !reply.contains("error") ||
        reply["error"].value("code", 0) != -32800)
      co_return "a cancelled call was answered otherwise: " + response.body().substr(0, 160);
    co_return std::nullopt;
  }

  net::awaitable<std::optional<std::string>> cancel(std::uint64_t id,
                                                    Clock::time_point& sent) override {
    sent = Clock::now();
    http::response<http::string_body> response;
    if (auto error = co_await exchange(cancel_body(id), response)) co_return error;
    if (response.result_int() != 202)
      co_return "a cancel was answered " + std::to_string(response.result_int());
    co_return std::nullopt;
  }

  void abort() override {
    broken_ = true;
    beast::error_code ignored;
    stream_.socket().close(ignored);
  }

 private:
  // The relay's request with `body`, a JSON-RPC message, as every caller sends it; a
  // 2026-07-28 caller's tools/call repeats its method and `tool` in headers.
  net::awaitable<std::optional<std::string>> post(std::string body, std::string_view tool = {}) {
    http::request<http::string_body> request{http::verb::post, target_, 11};
    request.set(http::field::host, host_);
    request.set(http::field::authorization, authorization_);
    request.set(http::field::content_type, "application/json");
    request.set(http::field::accept, "application/json, text/event-stream");
    // A caller of the revision whose streams are resumable (docs/protocol.md, "Resumable
    // streams"), as today's SDK clients are.
    request.set("MCP-Protocol-Version", stateless_ ? "2026-07-28" : "2025-11-25");
    if (stateless_ && !tool.empty()) {
      request.set("Mcp-Method", "tools/call");
      request.set("Mcp-Name", tool);
    }
    request.keep_alive(true);
    request.body() = std::move(body);
    request.prepare_payload();
    const auto [error, written] = co_await http::async_write(stream_, request, kAwait);
    if (error) co_return transport_error("HTTP write", error);
    co_return std::nullopt;
  }

  // One POST of `body` and its whole response, however it is framed (a stream is chunked).
  net::awaitable<std::optional<std::string>> exchange(std::string body,
                                                      http::response<http::string_body>& out,
                                                      std::string_view tool = {}) {
    if (auto error = co_await post(std::move(body), tool)) co_return error;
    http::response_parser<http::string_body> parser;
    parser.body_limit(kMaxResponseBytes);
    const auto [read_error, read] = co_await http::async_read(stream_, buffer_, parser, kAwait);
    if (read_error) co_return transport_error("HTTP read", read_error);
    out = parser.release();
    co_return std::nullopt;
  }

  // The reply becomes an event stream: `spec.progress` progress events with the caller's
  // own token, then the response as the last event.
  net::awaitable<std::optional<std::string>> call_with_progress(const CallSpec& spec) {
    const std::uint64_t id = next_id_++;
    http::response<http::string_body> response;
    if (auto error =
            co_await exchange(request_body(index_, id, spec, stateless_), response, tool_of(spec)))
      co_return error;
    if (response.result_int() != 200)
      co_return "HTTP " + std::to_string(response.result_int()) + ": " +
          response.body().substr(0, 160);
    if (!response[http::field::content_type].starts_with("text/event-stream"))
      co_return "no event stream: " + response.body().substr(0, 160);
    auto events = harness::parse_sse(response.body());
    // A resumable stream's priming event carries an id and no message.
    std::erase_if(events, [](const harness::SseEvent& event) { return event.data.empty(); });
    if (events.size() != static_cast<std::size_t>(spec.progress) + 1)
      co_return std::to_string(events.size()) + " events: " + response.body().substr(0, 160);
    for (std::size_t i = 0; i + 1 < events.size(); ++i) {
      if (!is_progress_of(events[i].data, id))
        co_return "not this call's progress: " + events[i].data;
    }
    co_return check_reply(events.back().data, index_, id, spec);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::unique_ptr<char[]> storage_;  // the body, kept between calls: reused, never zeroed
  std::size_t capacity_ = 0;
  int port_;
  std::string target_;
  std::string authorization_;
  std::string host_;
  std::shared_ptr<const std::string> fixed_reply_;
  bool stateless_ = false;
};

}  // namespace sbbench
