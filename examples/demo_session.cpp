#include "examples/demo_session.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <tuple>
#include <utility>

#include "examples/demo_mcp.hpp"

namespace demo {

net::awaitable<DialResult> Session::dial(const sb::DialTarget& endpoint,
                                         const std::string& secret) {
  tcp::resolver resolver(executor_);
  auto& tcp_layer = beast::get_lowest_layer(ws_);
  tcp_layer.expires_after(kConnectTimeout);
  const auto [resolve_error, addresses] =
      co_await resolver.async_resolve(endpoint.host, endpoint.port, kAwait);
  if (resolve_error)
    co_return DialResult{DialOutcome::kFailed, endpoint.host + ": " + resolve_error.message()};
  const auto [connect_error, peer] = co_await tcp_layer.async_connect(addresses, kAwait);
  if (connect_error)
    co_return DialResult{DialOutcome::kFailed,
                         "connect to " + endpoint.host_header + ": " + connect_error.message()};

  // From here the WebSocket layer keeps its own timers; Beast wants the TCP layer's off.
  tcp_layer.expires_never();
  ws_.set_option(websocket::stream_base::timeout{
      .handshake_timeout = kUpgradeTimeout,            // also bounds our own close handshake
      .idle_timeout = websocket::stream_base::none(),  // liveness is ping_loop's job
      .keep_alive_pings = false,
  });
  ws_.set_option(websocket::stream_base::decorator([secret](websocket::request_type& request) {
    request.set(http::field::authorization, "Bearer " + secret);
    request.set(http::field::user_agent, std::string(kProgram) + "/" + std::string(kVersion));
  }));
  ws_.read_message_max(kMaxMessageBytes);

  websocket::response_type response;
  const auto [upgrade_error] =
      co_await ws_.async_handshake(response, endpoint.host_header, endpoint.target, kAwait);
  if (!upgrade_error) co_return DialResult{DialOutcome::kAttached, {}};
  if (response.result() == http::status::unauthorized)
    co_return DialResult{DialOutcome::kUnauthorized, {}};
  if (upgrade_error == websocket::error::upgrade_declined)
    co_return DialResult{DialOutcome::kFailed, "upgrade refused: HTTP " +
                                                   std::to_string(response.result_int()) + " " +
                                                   std::string(response.reason())};
  co_return DialResult{DialOutcome::kFailed, "upgrade: " + upgrade_error.message()};
}

net::awaitable<SessionEnd> Session::serve() {
  attached_ = true;
  last_heard_ = Clock::now();
  ws_.text(true);
  // Pings, pongs and close frames count as hearing from the switchboard.
  ws_.control_callback(
      [this](websocket::frame_type, beast::string_view) { last_heard_ = Clock::now(); });
  auto self = shared_from_this();
  net::co_spawn(
      executor_, [self] { return self->write_loop(); }, net::detached);
  net::co_spawn(
      executor_, [self] { return self->ping_loop(); }, net::detached);

  beast::error_code read_error;
  for (;;) {
    beast::flat_buffer buffer;
    const auto [error, size] = co_await ws_.async_read(buffer, kAwait);
    if (error) {
      read_error = error;
      break;
    }
    last_heard_ = Clock::now();
    on_message(beast::buffers_to_string(buffer.data()));
  }

  finished_ = true;
  wake_writer_.cancel();
  ping_timer_.cancel();
  beast::get_lowest_layer(ws_).close();  // no-op after a completed close handshake
  if (read_error == websocket::error::closed)
    co_return SessionEnd{ws_.reason().code,
                         std::string(ws_.reason().reason.data(), ws_.reason().reason.size())};
  co_return SessionEnd{kCloseAbnormal,
                       dropped_because_.empty() ? read_error.message() : dropped_because_};
}

void Session::close_normally() {
  if (!attached() || closing_) return;
  closing_ = true;
  ws_.async_close(websocket::close_code::normal, [self = shared_from_this()](beast::error_code) {});
}

void Session::on_message(const std::string& text) {
  json message = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (message.is_discarded() || !is_request(message)) return;  // nothing to answer

  // `initialize` is answered before the next frame is even read, so it always comes
  // first; everything else goes to the tool pool.
  if (message["method"] == "initialize") {
    send(reply_to(message));
    return;
  }
  net::post(tool_pool_, [self = shared_from_this(), request = std::move(message)]() mutable {
    json reply = reply_to(request);
    const auto executor = self->executor_;
    // Hand our reference over too, so the session is only ever destroyed on its thread.
    net::post(executor, [self = std::move(self), reply = std::move(reply)] { self->send(reply); });
  });
}

void Session::send(const json& reply) {
  if (finished_) return;  // the switchboard already failed this call when the socket went
  std::string text = reply.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > kMaxMessageBytes)  // a bigger frame would close the whole socket
    text = rpc_error(reply.at("id"), -32603, "reply larger than 16 MiB").dump();
  outbox_.push_back({.text = std::move(text)});
  wake_writer_.cancel();
}

net::awaitable<void> Session::write_loop() {
  while (!finished_) {
    if (outbox_.empty()) {
      wake_writer_.expires_at(Clock::time_point::max());
      co_await wake_writer_.async_wait(kAwait);  // cancelled by send() or at the end
      continue;
    }
    const Outgoing next = std::move(outbox_.front());
    outbox_.pop_front();
    beast::error_code error;
    if (next.ping) {
      std::tie(error) = co_await ws_.async_ping({}, kAwait);
    } else {
      std::tie(error, std::ignore) = co_await ws_.async_write(net::buffer(next.text), kAwait);
    }
    if (error) co_return;  // the reader sees the same broken socket and ends the session
  }
}

net::awaitable<void> Session::ping_loop() {
  auto next_ping = Clock::now() + kPingInterval;
  for (;;) {
    // Wake for the next ping or for the silence deadline, whichever is first; a frame
    // heard meanwhile moves the deadline, which the next round sees.
    ping_timer_.expires_at(std::min(next_ping, last_heard_ + kDeadAfterSilence));
    const auto [error] = co_await ping_timer_.async_wait(kAwait);
    if (error || finished_) co_return;
    const auto now = Clock::now();
    if (now - last_heard_ >= kDeadAfterSilence) {
      dropped_because_ = "nothing heard from the switchboard for 60 s";
      beast::get_lowest_layer(ws_).close();  // the pending read fails; serve() returns
      co_return;
    }
    if (now >= next_ping) {
      outbox_.push_back({.ping = true});
      wake_writer_.cancel();
      next_ping = now + kPingInterval;
    }
  }
}

}  // namespace demo
