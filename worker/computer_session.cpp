// Session's socket life (session.hpp): the upgrade, the MCP handshake, the one writer,
// liveness and the close; and start_session, which makes a session of a handed-over socket.
#include "worker/computer_session.hpp"

#include <sys/socket.h>

#include <utility>

#include "base/page_release.hpp"
#include "base/unix_time.hpp"
#include "ipc/frame.hpp"
#include "shared/jsonrpc.hpp"
#include "worker/session.hpp"
#include "worker/stateless_revision.hpp"

namespace sb::worker {
namespace {

using namespace std::chrono_literals;

constexpr int kSilentTicksBeforeDrop = 3;
constexpr std::size_t kOutboxLimit = 64;
// A read buffer larger than this has its pages given back once its computer has sent no
// message for kIdleBeforeRelease.
constexpr std::size_t kKeptReadBufferBytes = 1024 * 1024;
constexpr auto kIdleBeforeRelease = 2s;
constexpr auto kCloseFlushGrace = 2s;
constexpr std::string_view kHandshakeCaller = "openab-sb/handshake";

std::string_view close_reason_text(std::uint16_t code) {
  switch (code) {
    case close_code::kNormal:
      return "normal closure";
    case close_code::kGoingAway:
      return "switchboard shutting down";
    case close_code::kAbnormal:
      return "connection dropped";
    case close_code::kTooBig:
      return "message too big";
    case close_code::kProtocolError:
      return "WebSocket protocol error";
    case close_code::kInvalidPayload:
      return "text message not valid UTF-8";
    case close_code::kSilent:
      return "no frame from the VM within the liveness budget";
    case close_code::kReplaced:
      return "replaced by a newer attach";
    case close_code::kRevoked:
      return "the VM secret was revoked or rotated";
    case close_code::kHandshakeFailed:
      return "MCP initialize failed or timed out";
    default:
      return "closed";
  }
}

}  // namespace

tcp::socket adopt_tcp_socket(net::io_context& io, base::UniqueFd socket) {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  ::getsockname(socket.get(), reinterpret_cast<sockaddr*>(&address), &length);
  const tcp protocol = address.ss_family == AF_INET6 ? tcp::v6() : tcp::v4();
  return tcp::socket(io, protocol, socket.release());
}

void Session::configure_stream() {
  ws_.read_message_max(ipc::kMaxMessageSize);
  ws_.text(true);
  // Liveness is ours (docs/protocol.md, "Liveness"); Beast's own idle pings stay off.
  ws_.set_option(websocket::stream_base::timeout{settings_.handshake_timeout,
                                                 websocket::stream_base::none(), false});
  ws_.control_callback([this](websocket::frame_type, beast::string_view) { silent_ticks_ = 0; });
}

void Session::begin(std::function<void(std::shared_ptr<ComputerSession>)> installed) {
  configure_stream();
  ws_.async_accept(
      net::buffer(upgrade_request_),
      [self = shared_from_this(), installed = std::move(installed)](beast::error_code error) {
        self->upgrade_request_.clear();
        self->upgrade_request_.shrink_to_fit();
        if (error || self->phase_ != Phase::kUpgrading) return self->finish_unupgraded();
        self->install();
        installed(self);
      });
}

void Session::reconfigure(const std::string& computer, bool sole_caller) {
  settings_.computer = computer;
  settings_.sole_caller = sole_caller;
}

ipc::ComputerStatus Session::status() const {
  ipc::ComputerStatus status;
  if (!live()) return status;
  status.state =
      phase_ == Phase::kReady ? ipc::ComputerState::kReady : ipc::ComputerState::kHandshaking;
  status.in_flight = static_cast<std::uint32_t>(pending_.size());
  status.max_in_flight = static_cast<std::uint32_t>(settings_.max_inflight);
  status.attached_at_ms = attached_at_ms_;
  status.peer = settings_.peer;
  status.generation = settings_.generation;
  status.server_json = server_json_;
  status.offers = offers_;
  return status;
}

void Session::install() {
  phase_ = Phase::kHandshaking;
  attached_at_ms_ = unix_time_now<std::chrono::milliseconds>();
  attached_at_ = std::chrono::steady_clock::now();
  read_next();
  schedule_tick();
  send_handshake();
  hooks_.status_changed();
}

void Session::begin_close(std::uint16_t code, bool send_frame) {
  if (stopped()) return;
  const bool upgraded = phase_ != Phase::kUpgrading;
  close_code_ = code;
  phase_ = Phase::kClosing;
  fail_all_pending();
  outbox_.clear();
  tick_timer_.cancel();
  hooks_.status_changed();
  read_on();  // the read loop is what ends the session
  if (!upgraded || !send_frame) return drop_connection();
  // The close frame goes out ahead of anything still queued; a write already on the wire
  // finishes first, which Beast orders for us.
  ws_.async_close(
      websocket::close_reason(static_cast<websocket::close_code>(code), close_reason_text(code)),
      [self = shared_from_this()](beast::error_code) {});
  flush_timer_.expires_after(kCloseFlushGrace);
  flush_timer_.async_wait([self = shared_from_this()](beast::error_code error) {
    if (!error) self->drop_connection();
  });
}

void Session::drop_connection() {
  beast::error_code ignored;
  ws_.next_layer().socket().shutdown(tcp::socket::shutdown_both, ignored);
  ws_.next_layer().socket().close(ignored);
}

// The read loop has stopped: the session is over whatever ended it (docs/protocol.md,
// "Session end").
void Session::finish(std::uint16_t code_if_unclosed) {
  if (phase_ == Phase::kEnded || phase_ == Phase::kParked) return;
  if (phase_ != Phase::kClosing) {
    close_code_ = code_if_unclosed;
    phase_ = Phase::kClosing;
    fail_all_pending();
    outbox_.clear();
  }
  phase_ = Phase::kEnded;
  tick_timer_.cancel();
  flush_timer_.cancel();
  release_timer_.cancel();
  drop_connection();
  const std::uint16_t code = close_code_.value_or(close_code::kNormal);
  const auto attached_for = std::chrono::duration_cast<std::chrono::seconds>(
                                std::chrono::steady_clock::now() - attached_at_)
                                .count();
  hooks_.audit(ipc::DetachEvent{
      .peer = settings_.peer,
      .generation = settings_.generation,
      .code = code,
      .reason = std::string(close_reason_text(code)),
      .attached_for_secs = static_cast<std::uint64_t>(std::max<std::int64_t>(attached_for, 0))});
  log_info("computer detached", {{"computer", settings_.computer},
                                 {"peer", settings_.peer},
                                 {"generation", std::to_string(settings_.generation)},
                                 {"code", std::to_string(code)}});
  hooks_.status_changed();
  hooks_.ended();
}

// The upgrade never completed: no attach happened, so there is nothing to audit.
void Session::finish_unupgraded() {
  phase_ = Phase::kEnded;
  drop_connection();
  hooks_.ended();
}

void Session::read_next() {
  ws_.async_read(read_buffer_, [self = shared_from_this()](beast::error_code error, std::size_t) {
    self->on_read(error);
  });
}

void Session::on_read(beast::error_code error) {
  if (error) {
    std::uint16_t code = close_code::kAbnormal;
    if (error == websocket::error::closed) {
      code = ws_.reason().code != websocket::close_code::none ? ws_.reason().code
                                                              : close_code::kNormal;
    } else if (error == websocket::error::message_too_big) {
      code = close_code::kTooBig;
    } else if (error == websocket::error::bad_frame_payload) {
      code = close_code::kInvalidPayload;  // Beast closed with 1007: text not UTF-8
    } else if (error == websocket::condition::protocol_violation) {
      code = close_code::kProtocolError;  // Beast closed with 1002
    }
    return finish(code);
  }
  silent_ticks_ = 0;
  const auto data = read_buffer_.cdata();
  handle_message(std::string_view(static_cast<const char*>(data.data()), data.size()));
  read_buffer_.consume(read_buffer_.size());
  if (phase_ == Phase::kEnded) return;
  if (read_buffer_.capacity() > kKeptReadBufferBytes) release_read_buffer_when_idle();
  if (!hooks_.has_room || hooks_.has_room([weak = weak_from_this()] {
        if (const auto self = weak.lock()) self->read_on();
      }))
    return read_next();
  reading_paused_ = true;
}

// The buffer keeps its size while large messages keep coming: freed and grown again for
// every one, it made a 16 MiB reply a third slower. Once the computer has sent nothing for a
// while its pages go back to the system, the buffer staying where it is (docs/robustness.md,
// "Memory"). The read waiting for the next message has prepared its room in that buffer
// already: it is left alone as long as the socket has handed the reader no byte of a data
// frame since the last message, since only such bytes are written into it.
void Session::release_read_buffer_when_idle() {
  const std::uint64_t handed = ws_.next_layer().data_bytes_handed();
  release_timer_.expires_after(kIdleBeforeRelease);
  release_timer_.async_wait([weak = weak_from_this(), handed](beast::error_code error) {
    const auto self = weak.lock();
    if (error || !self || self->phase_ == Phase::kEnded || self->phase_ == Phase::kParked) return;
    if (self->ws_.next_layer().data_bytes_handed() != handed) {
      return self->release_read_buffer_when_idle();  // a message is on its way: later
    }
    base::release_pages(self->read_buffer_.cdata().data(), self->read_buffer_.capacity());
  });
}

// Room again, or the session must go on reading to end: to close, or to stop at the
// boundary a switch parks it at.
void Session::read_on() {
  if (!std::exchange(reading_paused_, false)) return;
  if (phase_ != Phase::kEnded && phase_ != Phase::kParked) read_next();
}

void Session::send_handshake() {
  PendingCall call{.caller = std::string(kHandshakeCaller), .handshake = true};
  const auto id = pending_.add(std::move(call), 1);
  if (!id) return;
  arm_deadline(*id, settings_.handshake_timeout);
  const json request{
      {"id", *id},
      {"jsonrpc", "2.0"},
      {"method", "initialize"},
      {"params",
       {{"capabilities",
         {{"elicitation", json::object()},
          {"roots", {{"listChanged", false}}},
          {"sampling", json::object()}}},
        {"clientInfo", {{"name", jsonrpc::kProductName}, {"version", SWITCHBOARD_VERSION}}},
        {"protocolVersion", jsonrpc::kProtocolVersion}}}};
  enqueue(request.dump(), /*droppable=*/false);
}

void Session::on_handshake_reply(const json& reply) {
  if (discovering_) return on_discover_reply(reply);
  const auto result = reply.find("result");
  if (result == reply.end()) {
    if (refused_for_stateless_revision(reply)) return send_discover();
    log_warn("computer refused initialize", {{"peer", settings_.peer}, {"response", reply.dump()}});
    return close(close_code::kHandshakeFailed);
  }
  const auto server = result->is_object() ? result->find("serverInfo") : result->end();
  server_json_ = (result->is_object() && server != result->end()) ? server->dump() : "null";
  const auto capabilities = result->is_object() ? result->find("capabilities") : result->end();
  offers_ = result->is_object() && capabilities != result->end()
                ? ipc::offer::of_capabilities(*capabilities)
                : 0;
  enqueue(R"({"jsonrpc":"2.0","method":"notifications/initialized"})", /*droppable=*/false);
  become_ready();
}

// A computer that speaks only 2026-07-28 has no handshake: what it offers comes from
// `server/discover`, under the same deadline.
void Session::send_discover() {
  discovering_ = true;
  PendingCall call{.caller = std::string(kHandshakeCaller), .handshake = true};
  const auto id = pending_.add(std::move(call), 1);
  if (!id) return;
  arm_deadline(*id, settings_.handshake_timeout);
  const json request{{"id", *id},
                     {"jsonrpc", "2.0"},
                     {"method", "server/discover"},
                     {"params", discover_params()}};
  enqueue(request.dump(), /*droppable=*/false);
}

void Session::on_discover_reply(const json& reply) {
  const auto result = reply.find("result");
  const auto server = result == reply.end() ? std::nullopt : discovered_server(*result);
  if (!server) {
    log_warn("computer refused initialize and server/discover",
             {{"peer", settings_.peer}, {"response", reply.dump()}});
    return close(close_code::kHandshakeFailed);
  }
  server_json_ = *server;
  const auto capabilities = result->find("capabilities");
  offers_ = (capabilities != result->end() ? ipc::offer::of_capabilities(*capabilities) : 0) |
            ipc::offer::kStatelessOnly;
  become_ready();
  listen_from_the_start();
}

void Session::become_ready() {
  phase_ = Phase::kReady;
  hooks_.status_changed();
  try_park();
}

void Session::enqueue(std::string text, bool droppable) {
  if (stopped()) return;
  if (droppable && outbox_.size() >= kOutboxLimit) return;
  outbox_.push_back(Outgoing{std::move(text), false});
  if (!writing_) write_next();
}

void Session::enqueue_ping() {
  if (outbox_.size() >= kOutboxLimit || on_parked_) return;
  outbox_.push_back(Outgoing{std::string(), true});
  if (!writing_) write_next();
}

void Session::write_next() {
  if (outbox_.empty() || stopped()) {
    writing_ = false;
    return try_park();
  }
  writing_ = true;
  auto done = [self = shared_from_this()](beast::error_code error, std::size_t = 0) {
    if (!self->outbox_.empty()) self->outbox_.pop_front();
    if (error) {
      self->writing_ = false;
      return;  // the read side sees the broken socket and ends the session
    }
    self->write_next();
  };
  if (outbox_.front().ping) {
    ws_.async_ping({}, [done](beast::error_code error) { done(error); });
  } else {
    ws_.async_write(net::buffer(outbox_.front().text), done);
  }
}

void Session::schedule_tick() {
  tick_timer_.expires_after(settings_.ping_interval);
  tick_timer_.async_wait([self = shared_from_this()](beast::error_code error) {
    if (!error) self->on_tick();
  });
}

void Session::on_tick() {
  if (!live()) return;
  // Not reading, the session cannot hear the computer: its silence is the supervisor's.
  if (reading_paused_) silent_ticks_ = 0;
  if (++silent_ticks_ >= kSilentTicksBeforeDrop) {
    log_info("computer silent past the ping budget", {{"peer", settings_.peer}});
    return close(close_code::kSilent);
  }
  enqueue_ping();
  schedule_tick();
}

std::shared_ptr<ComputerSession> start_session(
    net::io_context& io, base::UniqueFd socket, std::string upgrade_bytes, SessionSettings settings,
    SessionHooks hooks, std::function<void(std::shared_ptr<ComputerSession>)> installed) {
  tcp::socket stream = adopt_tcp_socket(io, std::move(socket));
  // The request is the stream's to parse; the computer's frames read past it are the
  // socket's, which hands them on as if it had just read them.
  const auto request_end = upgrade_bytes.find("\r\n\r\n");
  std::string read_past;
  if (request_end != std::string::npos) {
    read_past = upgrade_bytes.substr(request_end + 4);
    upgrade_bytes.resize(request_end + 4);
  }
  auto session =
      std::make_shared<Session>(io, SessionSocket(std::move(stream), std::move(read_past)),
                                std::move(upgrade_bytes), std::move(settings), std::move(hooks));
  session->begin(std::move(installed));
  return session;
}

}  // namespace sb::worker
