// Fuzz target: a computer's WebSocket messages into a real worker session
// (worker/computer_session.hpp), in process. The session gets one end of a socket pair, as
// the worker gets the attached socket from the supervisor; a Beast WebSocket client on the
// other end plays the computer. The client dials the upgrade itself; its request is read off
// the socket here and handed to the session as the supervisor hands it over.
//
// Input: lines, each one step.
//   any other line   a text message from the computer
//   #b<text>         a binary message from the computer
//   #c<f><params>    the supervisor forwards a tools/call with these params (JSON; "{}" when
//                    not valid), flags f: caller (f & 3), stream (f & 4), a timeout of 0 ms
//                    (f & 8), a caller cap of 1 (f & 16). Call ids count from 1; the session's
//                    own ids from 2, after the initialize request (1).
//   #x<d>            the supervisor cancels call d (a digit), or the newest call
//   #a<json>         the caller answers the newest request routed to it: result <json>,
//                    or an error when <json> is "!"
//   #d<d>            call d's reply has left the supervisor (a digit), or the oldest reply
//                    not yet delivered: its place in the caps is free
//   #r               reconfigure: sole_caller flips (it starts true)
//   #q<d>            the worker closes the session: 1000, 1001, 4002 or 4003 for d 0-3
// After the last line the computer closes the WebSocket (1000) unless the session already has.
//
// The io_context runs until nothing is ready after each step: every step's effects have
// happened before the next, and the session's own timers (15 s and 20 s) never fire, which
// keeps a run deterministic. A timeout of 0 ms makes the deadline path reachable anyway.
//
// Besides memory safety, the session is held to what its header promises: each forwarded
// call's outcome comes back through hooks.reply exactly once unless it was cancelled first;
// a reply body is the computer's object without "id"; messages go only to calls in flight and
// carry the caller's own progress token; everything written to the computer is JSON-RPC;
// `ended` runs once, last, after the computer closed.
#include <sys/socket.h>

#include <boost/asio/buffer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/websocket/stream.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/asio_names.hpp"
#include "fuzz/fuzz_check.hpp"
#include "ipc/channel.hpp"
#include "worker/computer_session.hpp"

namespace {

using namespace sb::asio_names;
using json = nlohmann::json;
using sb::ipc::CallStatus;
using sb::ipc::MessageKind;
using sb::worker::ComputerSession;

constexpr int kMaxInflight = 4;

// What the supervisor's side of the session saw, checked as it happens and at the end.
struct Supervisor {
  std::shared_ptr<ComputerSession> session;
  bool installed = false;
  int ended = 0;
  int detach_lines = 0;
  std::set<std::uint64_t> forwarded;
  std::map<std::uint64_t, int> replies;               // by call id
  std::set<std::uint64_t> delivered;                  // replies that have left
  std::set<std::uint64_t> cancelled;                  // while still in flight
  std::map<std::uint64_t, std::string> caller_token;  // the caller's progressToken, as JSON
  std::optional<std::pair<std::uint64_t, std::uint64_t>> routed;  // newest (call id, key)
  std::uint64_t next_call_id = 1;

  bool in_flight(std::uint64_t call_id) const {
    return forwarded.contains(call_id) && !replies.contains(call_id) &&
           !cancelled.contains(call_id);
  }

  void on_reply(std::uint64_t call_id, const sb::ipc::CallOutcome& outcome,
                const std::string& body) {
    FUZZ_CHECK(ended == 0);
    FUZZ_CHECK(forwarded.contains(call_id) && !cancelled.contains(call_id));
    FUZZ_CHECK(++replies[call_id] == 1);
    if (outcome.status != CallStatus::kReplied) {
      FUZZ_CHECK(body.empty());
      return;
    }
    FUZZ_CHECK(outcome.response_bytes > body.size());
    const json reply = json::parse(body, nullptr, /*allow_exceptions=*/false);
    FUZZ_CHECK(reply.is_object() && !reply.contains("id"));
    FUZZ_CHECK(reply.contains("result") || reply.contains("error"));
  }

  void on_message(std::uint64_t call_id, const sb::ipc::MessageMeta& meta,
                  const std::string& body) {
    FUZZ_CHECK(ended == 0);
    const json message = json::parse(body, nullptr, /*allow_exceptions=*/false);
    FUZZ_CHECK(message.is_object() && !message.contains("id"));
    FUZZ_CHECK(message.contains("method"));
    if (call_id == 0) {  // for whoever the supervisor knows wants it: no call's
      FUZZ_CHECK(meta.kind == MessageKind::kNotification);
      const json& method = message.at("method");
      FUZZ_CHECK(method == "notifications/tasks/status" ||
                 method == "notifications/resources/updated" ||
                 method == "notifications/tools/list_changed" ||
                 method == "notifications/prompts/list_changed");
      return;
    }
    FUZZ_CHECK(in_flight(call_id));
    switch (meta.kind) {
      case MessageKind::kProgress: {
        // The computer saw the session's token; the caller gets its own back.
        const auto token = caller_token.find(call_id);
        FUZZ_CHECK(token != caller_token.end());
        FUZZ_CHECK(message.at("params").at("progressToken").dump() == token->second);
        break;
      }
      case MessageKind::kRequest:
        routed = {call_id, meta.key};
        break;
      case MessageKind::kNotification:
        break;
    }
  }

  void check_status() const {
    if (!session) return;  // not returned by start_session yet
    const auto status = session->status();
    FUZZ_CHECK(status.in_flight <= status.max_in_flight || !session->live());
    FUZZ_CHECK(json::accept(status.server_json));
  }

  // After the session ended: no call is left without its outcome.
  void check_settled() const {
    FUZZ_CHECK(ended == 1 && detach_lines == 1);
    for (const std::uint64_t call_id : forwarded) {
      if (cancelled.contains(call_id)) continue;
      FUZZ_CHECK(replies.contains(call_id));
    }
  }
};

using Socket = net::local::stream_protocol::socket;

// The computer's end: a WebSocket client that records everything the session sends it.
struct Computer {
  explicit Computer(net::io_context& io) : ws(Socket(io)) {}

  void read_loop() {
    ws.async_read(buffer, [this](beast::error_code error, std::size_t) {
      if (error) {
        open = false;
        return;
      }
      const std::string text = beast::buffers_to_string(buffer.data());
      buffer.consume(buffer.size());
      // Everything the session writes to a computer is one JSON-RPC message.
      const json message = json::parse(text, nullptr, /*allow_exceptions=*/false);
      FUZZ_CHECK(message.is_object() && message.value("jsonrpc", "") == "2.0");
      read_loop();
    });
  }

  websocket::stream<Socket> ws;
  beast::flat_buffer buffer;
  bool open = false;
};

// Runs handlers until none is ready: everything the last step can cause has happened.
void settle(net::io_context& io) {
  for (int idle = 0; idle < 3;) {
    if (io.stopped()) io.restart();
    idle = io.poll() == 0 ? idle + 1 : 0;
  }
}

std::string params_from(std::string_view text) {
  if (text.empty()) return "{}";  // as the worker sends a call without a body
  const json params = json::parse(text, nullptr, /*allow_exceptions=*/false);
  return params.is_discarded() ? "{}" : params.dump();
}

// The caller's own progress token in `params`, as the session would find it.
std::string progress_token_of(const std::string& params) {
  const json parsed = json::parse(params, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object() || !parsed.contains("_meta") || !parsed.at("_meta").is_object())
    return {};
  const json& meta = parsed.at("_meta");
  const auto token = meta.find("progressToken");
  if (token == meta.end() || !(token->is_string() || token->is_number_integer())) return {};
  return token->dump();
}

void forward(Supervisor& supervisor, std::string_view rest) {
  const std::uint8_t flags = rest.empty() ? 0 : static_cast<std::uint8_t>(rest.front());
  if (!rest.empty()) rest.remove_prefix(1);
  if (rest.starts_with(' ')) rest.remove_prefix(1);
  const std::uint64_t call_id = supervisor.next_call_id++;
  sb::worker::ForwardedCall call{
      .call_id = call_id,
      .caller = std::string("caller-") + static_cast<char>('a' + (flags & 3)),
      .caller_cap = (flags & 16) ? 1 : 0,
      .timeout = std::chrono::milliseconds((flags & 8) ? 0 : 60'000),
      .method = "tools/call",
      .params_json = params_from(rest),
      .stream = (flags & 4) != 0,
  };
  if (const auto token = progress_token_of(call.params_json); !token.empty())
    supervisor.caller_token[call_id] = token;
  supervisor.forwarded.insert(call_id);
  supervisor.session->forward(std::move(call));
}

void cancel(Supervisor& supervisor, std::string_view rest) {
  std::uint64_t call_id = supervisor.next_call_id - 1;
  if (!rest.empty() && rest.front() >= '0' && rest.front() <= '9')
    call_id = static_cast<std::uint64_t>(rest.front() - '0');
  if (supervisor.in_flight(call_id)) supervisor.cancelled.insert(call_id);
  supervisor.session->cancel(call_id, "cancelled by the caller");
}

void deliver(Supervisor& supervisor, std::string_view rest) {
  std::optional<std::uint64_t> call_id;
  if (!rest.empty() && rest.front() >= '0' && rest.front() <= '9') {
    call_id = static_cast<std::uint64_t>(rest.front() - '0');
  } else {
    for (const auto& [replied, count] : supervisor.replies) {
      if (supervisor.delivered.contains(replied)) continue;
      call_id = replied;
      break;
    }
  }
  if (!call_id) return;
  supervisor.delivered.insert(*call_id);
  supervisor.session->delivered(*call_id);
}

// As the supervisor builds it (supervisor/mcp/forward.cpp): jsonrpc and result or error, dumped.
void answer(Supervisor& supervisor, std::string_view rest) {
  const auto [call_id, key] =
      supervisor.routed.value_or(std::pair<std::uint64_t, std::uint64_t>{1, 1});
  json response{{"jsonrpc", "2.0"}};
  if (rest == "!") {
    response["error"] = {{"code", -32000}, {"message", "declined"}};
  } else {
    const json result = json::parse(rest, nullptr, /*allow_exceptions=*/false);
    response["result"] = result.is_discarded() ? json::object() : result;
  }
  supervisor.session->answer(call_id, key, response.dump());
}

std::uint16_t close_code_for(std::string_view rest) {
  namespace code = sb::worker::close_code;
  switch (rest.empty() ? '3' : rest.front()) {
    case '0':
      return code::kNormal;
    case '1':
      return code::kGoingAway;
    case '2':
      return code::kReplaced;
    default:
      return code::kRevoked;
  }
}

// Writes one message and runs until the session has read it.
bool send(Computer& computer, net::io_context& io, std::string_view text) {
  bool written = false;
  computer.ws.async_write(net::buffer(text.data(), text.size()),
                          [&](beast::error_code error, std::size_t) { written = !error; });
  settle(io);
  return written && computer.open;
}

// One step; false once the computer can no longer be written to.
bool step(Supervisor& supervisor, Computer& computer, net::io_context& io, std::string_view line) {
  // The worker forgets an ended session (WorkerApp::on_session_ended): nothing reaches it.
  if (supervisor.ended > 0) return false;
  if (line.starts_with('#') && line.size() >= 2) {
    const std::string_view rest = line.substr(2);
    switch (line[1]) {
      case 'c':
        forward(supervisor, rest);
        break;
      case 'x':
        cancel(supervisor, rest);
        break;
      case 'a':
        answer(supervisor, rest);
        break;
      case 'd':
        deliver(supervisor, rest);
        break;
      case 'r': {
        const bool sole_caller = !supervisor.session->settings().sole_caller;
        supervisor.session->reconfigure("macmini", sole_caller);
        break;
      }
      case 'q':
        supervisor.session->close(close_code_for(rest));
        break;
      case 'b':
        if (!computer.open) return false;
        computer.ws.binary(true);
        return send(computer, io, rest);
      default:
        if (!computer.open) return false;
        computer.ws.text(true);
        return send(computer, io, line);
    }
    settle(io);
    supervisor.check_status();
    return true;
  }
  if (!computer.open) return false;
  computer.ws.text(true);
  return send(computer, io, line);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  Supervisor supervisor;
  {
    net::io_context io;
    auto [session_end, computer_end] = sb::ipc::make_socket_pair();
    Computer computer(io);
    computer.ws.next_layer().assign(net::local::stream_protocol(), computer_end.release());

    sb::worker::SessionHooks hooks{
        .reply = [&](std::uint64_t call_id, const sb::ipc::CallOutcome& outcome,
                     std::string body) { supervisor.on_reply(call_id, outcome, body); },
        .message = [&](std::uint64_t call_id, const sb::ipc::MessageMeta& meta,
                       std::string body) { supervisor.on_message(call_id, meta, body); },
        .audit =
            [&](const sb::ipc::SessionEvent& event) {
              if (std::holds_alternative<sb::ipc::DetachEvent>(event)) ++supervisor.detach_lines;
            },
        .status_changed = [&] { supervisor.check_status(); },
        .ended = [&] { ++supervisor.ended; },
    };
    bool upgraded = false;
    computer.ws.async_handshake("switchboard", "/vm/attach",
                                [&](beast::error_code error) { upgraded = !error; });
    settle(io);  // the request is written
    std::string request(4096, '\0');
    const long got = ::recv(session_end.get(), request.data(), request.size(), MSG_DONTWAIT);
    FUZZ_CHECK(got > 0);
    request.resize(static_cast<std::size_t>(got));
    supervisor.session = sb::worker::start_session(
        io, std::move(session_end), std::move(request),
        sb::worker::SessionSettings{.computer = "macmini",
                                    .generation = 1,
                                    .max_inflight = kMaxInflight,
                                    .peer = "100.64.0.7",
                                    .sole_caller = true},
        std::move(hooks), [&](std::shared_ptr<ComputerSession>) { supervisor.installed = true; });

    settle(io);
    FUZZ_CHECK(upgraded && supervisor.installed);
    computer.open = true;
    computer.read_loop();
    settle(io);  // the initialize request arrives

    std::string_view rest = input;
    while (!rest.empty()) {
      const std::size_t end = rest.find('\n');
      const std::string_view line = rest.substr(0, end);
      rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
      if (!step(supervisor, computer, io, line)) break;
    }

    if (computer.open) {
      computer.ws.async_close(websocket::close_code::normal, [](beast::error_code) {});
    }
    settle(io);
    supervisor.check_settled();
    supervisor.session.reset();
  }
  return 0;
}
