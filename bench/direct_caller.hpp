// A direct caller: the same JSON-RPC text straight over a WebSocket that a fake computer
// dials in to the bench, past the MCP handshake the switchboard would do. Included by
// callers.cpp alone.
#pragma once

#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <string>
#include <string_view>
#include <utility>

#include "bench/call_messages.hpp"
#include "bench/caller.hpp"

namespace sbbench {

class DirectCaller final : public Caller {
 public:
  DirectCaller(int index, tcp::socket socket) : Caller(index), ws_(std::move(socket)) {}

  // The fake computer dialled us: accept its upgrade, then do what the switchboard does
  // first (initialize, expect a result, notifications/initialized). Not timed.
  net::awaitable<std::optional<std::string>> accept() {
    beast::get_lowest_layer(ws_).socket().set_option(tcp::no_delay(true));
    ws_.read_message_max(kMaxResponseBytes);
    ws_.text(true);
    const auto [accept_error] = co_await ws_.async_accept(kAwait);
    if (accept_error) co_return transport_error("WebSocket accept", accept_error);
    const std::string initialize =
        R"({"id":1,"jsonrpc":"2.0","method":"initialize","params":{"capabilities":{},)"
        R"("clientInfo":{"name":"switchboard-bench","version":"1"},)"
        R"("protocolVersion":"2025-06-18"}})";
    if (const auto [error, n] = co_await ws_.async_write(net::buffer(initialize), kAwait); error)
      co_return transport_error("WebSocket write", error);
    if (const auto [error, n] = co_await ws_.async_read(buffer_, kAwait); error)
      co_return transport_error("WebSocket read", error);
    const auto reply = json::parse(beast::buffers_to_string(buffer_.cdata()), nullptr, false);
    buffer_.consume(buffer_.size());
    if (!reply.is_object() || !reply.contains("result")) co_return "initialize was refused";
    const std::string initialized = R"({"jsonrpc":"2.0","method":"notifications/initialized"})";
    if (const auto [error, n] = co_await ws_.async_write(net::buffer(initialized), kAwait); error)
      co_return transport_error("WebSocket write", error);
    next_id_ = 2;
    co_return std::nullopt;
  }

  net::awaitable<std::optional<std::string>> call(const CallSpec& spec) override {
    const std::uint64_t id = next_id_++;
    const std::string body = request_body(index_, id, spec);
    if (const auto [error, n] = co_await ws_.async_write(net::buffer(body), kAwait); error)
      co_return transport_error("WebSocket write", error);
    for (int i = 0; i < spec.progress; ++i) {
      if (const auto [error, n] = co_await ws_.async_read(buffer_, kAwait); error)
        co_return transport_error("WebSocket read", error);
      const auto data = buffer_.cdata();
      const bool progress =
          is_progress_of(std::string_view(static_cast<const char*>(data.data()), data.size()), id);
      buffer_.consume(buffer_.size());
      if (!progress) co_return "not this call's progress";
    }
    if (const auto [error, n] = co_await ws_.async_read(buffer_, kAwait); error)
      co_return transport_error("WebSocket read", error);
    const auto data = buffer_.cdata();
    auto verdict = check_reply(std::string_view(static_cast<const char*>(data.data()), data.size()),
                               index_, id, spec);
    buffer_.consume(buffer_.size());
    co_return verdict;
  }

  net::awaitable<std::optional<std::string>> hold(std::atomic<std::uint64_t>& id) override {
    id = next_id_++;
    const std::string body = held_call_body(id);
    if (const auto [error, n] = co_await ws_.async_write(net::buffer(body), kAwait); error)
      co_return transport_error("WebSocket write", error);
    co_return std::nullopt;
  }

  net::awaitable<std::optional<std::string>> cancel(std::uint64_t id,
                                                    Clock::time_point& sent) override {
    const std::string body = cancel_body(id);
    sent = Clock::now();
    if (const auto [error, n] = co_await ws_.async_write(net::buffer(body), kAwait); error)
      co_return transport_error("WebSocket write", error);
    co_return std::nullopt;
  }

  void abort() override {
    broken_ = true;
    beast::error_code ignored;
    beast::get_lowest_layer(ws_).socket().close(ignored);
  }

 private:
  websocket::stream<beast::tcp_stream> ws_;
  beast::flat_buffer buffer_;
};

}  // namespace sbbench
