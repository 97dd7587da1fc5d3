// A worker session in process, for the tests of tests/unit/worker/: a real ComputerSession
// on one end of a socket pair, a Beast WebSocket client on the other as the computer, and
// the supervisor's side recorded from the session's hooks. The loop runs until nothing is
// ready after each step, so every step's effects have happened before the next.
#pragma once

#include <sys/socket.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/websocket/stream.hpp>
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/asio_names.hpp"
#include "ipc/channel.hpp"
#include "worker/computer_session.hpp"

namespace sb::worker::session_rig {

using namespace sb::asio_names;
using json = nlohmann::json;
using Socket = net::local::stream_protocol::socket;
using namespace std::chrono_literals;

struct Reply {
  std::uint64_t call_id = 0;
  ipc::CallOutcome outcome;
  std::string body;
};

struct Message {
  std::uint64_t call_id = 0;
  ipc::MessageMeta meta;
  json body;
};

// One session and its computer, attached and past the MCP handshake.
class SessionRig {
 public:
  SessionRig() : computer_(Socket(io_)) {
    auto [session_end, computer_end] = ipc::make_socket_pair();
    computer_.next_layer().assign(net::local::stream_protocol(), computer_end.release());
    computer_.async_handshake("switchboard", "/vm/attach", [](beast::error_code) {});
    settle();  // the upgrade request is written
    std::string request(4096, '\0');
    const auto got = ::recv(session_end.get(), request.data(), request.size(), MSG_DONTWAIT);
    request.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
    SessionHooks hooks{
        .reply =
            [this](std::uint64_t call_id, const ipc::CallOutcome& outcome, std::string body) {
              replies.push_back({call_id, outcome, body});
            },
        .message =
            [this](std::uint64_t call_id, const ipc::MessageMeta& meta, std::string body) {
              messages.push_back({call_id, meta, json::parse(body)});
            },
        .audit = [](ipc::SessionEvent) {},
        .status_changed = [] {},
        .ended = [this] { ++ended; },
    };
    session_ = start_session(io_, std::move(session_end), std::move(request),
                             SessionSettings{.computer = "macmini",
                                             .generation = 1,
                                             .max_inflight = 4,
                                             .peer = "100.64.0.7",
                                             .sole_caller = true},
                             std::move(hooks), [](std::shared_ptr<ComputerSession>) {});
    settle();
    read_loop();
    settle();  // initialize arrives
  }

  ~SessionRig() {
    session_->close(close_code::kGoingAway);
    settle();
  }

  // Answers the session's initialize as a daemon does, offering `capabilities`.
  void handshake(const json& capabilities = json{{"tools", json::object()}}) {
    const json initialize = received_at(0);
    send(json{{"jsonrpc", "2.0"},
              {"id", initialize["id"]},
              {"result",
               {{"protocolVersion", "2025-06-18"},
                {"capabilities", capabilities},
                {"serverInfo", {{"name", "rig"}, {"version", "1"}}}}}});
  }

  void send(const json& message) {
    const std::string text = message.dump();
    computer_.text(true);
    computer_.async_write(net::buffer(text), [](beast::error_code, std::size_t) {});
    settle();
  }

  // `message` in two frames, the loop run between them: a reply still arriving.
  void send_in_two_frames(const json& message) {
    const std::string text = message.dump();
    const std::size_t half = text.size() / 2;
    computer_.text(true);
    computer_.async_write_some(false, net::buffer(text.data(), half),
                               [](beast::error_code, std::size_t) {});
    settle();
    computer_.async_write_some(true, net::buffer(text.data() + half, text.size() - half),
                               [](beast::error_code, std::size_t) {});
    settle();
  }

  ComputerSession& session() { return *session_; }

  // What the computer has received, in order.
  const std::vector<json>& received() const { return received_; }
  json received_at(std::size_t index) const {
    return index < received_.size() ? received_[index] : json();
  }
  json last_received() const { return received_.empty() ? json() : received_.back(); }

  // Forwards a tools/call and runs until it has reached the computer.
  void forward(std::uint64_t call_id, json params, bool stream = false,
               std::chrono::milliseconds timeout = 60s) {
    session_->forward(ForwardedCall{.call_id = call_id,
                                    .caller = "alice",
                                    .timeout = timeout,
                                    .method = "tools/call",
                                    .params_json = params.dump(),
                                    .stream = stream});
    settle();
  }

  // Runs handlers until none is ready.
  void settle() {
    for (int idle = 0; idle < 3;) {
      if (io_.stopped()) io_.restart();
      idle = io_.poll() == 0 ? idle + 1 : 0;
    }
  }

  // Runs until `done` holds or `limit` of the loop's time has passed (for timers).
  template <typename Done>
  bool run_until(Done done, std::chrono::milliseconds limit = 2s) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (!done() && std::chrono::steady_clock::now() < until) {
      if (io_.stopped()) io_.restart();
      io_.run_for(5ms);
    }
    return done();
  }

  std::vector<Reply> replies;
  std::vector<Message> messages;
  int ended = 0;

 private:
  void read_loop() {
    computer_.async_read(buffer_, [this](beast::error_code error, std::size_t) {
      if (error) return;
      received_.push_back(json::parse(beast::buffers_to_string(buffer_.data())));
      buffer_.consume(buffer_.size());
      read_loop();
    });
  }

  net::io_context io_;
  websocket::stream<Socket> computer_;
  beast::flat_buffer buffer_;
  std::vector<json> received_;
  std::shared_ptr<ComputerSession> session_;
};

inline json echo(int n) {
  return json{{"name", "echo"}, {"arguments", {{"n", n}}}};
}

inline json unsupported_revision(const json& initialize, json supported) {
  return json{{"jsonrpc", "2.0"},
              {"id", initialize["id"]},
              {"error",
               {{"code", -32022},
                {"message", "Unsupported protocol version: 2025-06-18"},
                {"data", {{"supported", std::move(supported)}, {"requested", "2025-06-18"}}}}}};
}

// Refuses the session's initialize as a 2026-only computer does, and answers the
// server/discover that follows with `result`; returns that discover request.
inline json discover_as_2026_only(SessionRig& rig, const json& result) {
  rig.send(unsupported_revision(rig.received_at(0), {"2026-07-28"}));
  const json discover = rig.last_received();
  rig.send(json{{"jsonrpc", "2.0"}, {"id", discover["id"]}, {"result", result}});
  return discover;
}

}  // namespace sb::worker::session_rig
