#include "worker/computer_session.hpp"

#include <algorithm>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <deque>
#include <map>
#include <optional>

#include "base/asio_names.hpp"
#include "shared/deadline_queue.hpp"
#include "shared/jsonrpc.hpp"
#include "shared/log.hpp"
#include "worker/pending_calls.hpp"
#include "worker/reply_scan.hpp"

namespace sb::worker {
namespace {

using namespace sb::asio_names;
using json = nlohmann::json;
using namespace std::chrono_literals;

constexpr int kSilentTicksBeforeDrop = 3;
constexpr std::size_t kMaxMessageBytes = 16 * 1024 * 1024;
constexpr std::size_t kOutboxLimit = 64;
constexpr auto kCloseFlushGrace = 2s;
constexpr std::string_view kHandshakeCaller = "openab-sb/handshake";
// Requests from the computer waiting for their caller's answer; past this the computer is
// answered -32601 at once. A tool asks a question or two, not hundreds.
constexpr std::size_t kMaxRoutedRequests = 16;

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

// Puts `token` (unique on this socket) in place of the caller's params._meta.progressToken
// and returns the caller's token as JSON text, or "" when the call has none. Only a call
// that mentions a token at all pays for a parse.
std::string take_progress_token(std::string& params_json, std::uint64_t token) {
  if (params_json.find("progressToken") == std::string::npos) return {};
  json params = json::parse(params_json, nullptr, /*allow_exceptions=*/false);
  if (!params.is_object()) return {};
  const auto meta = params.find("_meta");
  if (meta == params.end() || !meta->is_object()) return {};
  const auto found = meta->find("progressToken");
  if (found == meta->end() || !(found->is_string() || found->is_number_integer())) return {};
  std::string callers = found->dump();
  *found = token;
  params_json = params.dump();
  return callers;
}

std::int64_t wall_clock_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class Session final : public ComputerSession, public std::enable_shared_from_this<Session> {
 public:
  Session(net::io_context& io, tcp::socket socket, std::string upgrade_bytes,
          SessionSettings settings, SessionHooks hooks)
      : ws_(std::move(socket)),
        upgrade_bytes_(std::move(upgrade_bytes)),
        settings_(std::move(settings)),
        hooks_(std::move(hooks)),
        pending_(settings_.max_inflight),
        tick_timer_(io),
        flush_timer_(io),
        deadlines_(io) {}

  void begin(std::function<void(std::shared_ptr<ComputerSession>)> installed) {
    ws_.read_message_max(kMaxMessageBytes);
    ws_.text(true);
    // Liveness is ours (docs/protocol.md, "Liveness"); Beast's own idle pings stay off.
    ws_.set_option(websocket::stream_base::timeout{settings_.handshake_timeout,
                                                   websocket::stream_base::none(), false});
    ws_.control_callback([this](websocket::frame_type, beast::string_view) { silent_ticks_ = 0; });
    ws_.async_accept(
        net::buffer(upgrade_bytes_),
        [self = shared_from_this(), installed = std::move(installed)](beast::error_code error) {
          self->upgrade_bytes_.clear();
          self->upgrade_bytes_.shrink_to_fit();
          if (error || self->phase_ != Phase::kUpgrading) return self->finish_unupgraded();
          self->install();
          installed(self);
        });
  }

  void forward(ForwardedCall forwarded) override {
    const std::uint64_t call_id = forwarded.call_id;
    if (phase_ != Phase::kReady) return reply_status(call_id, ipc::CallStatus::kNotAttached);
    PendingCall call{.call_id = call_id,
                     .caller = std::move(forwarded.caller),
                     .stream = forwarded.stream,
                     .timeout = forwarded.timeout,
                     .last_moment = std::chrono::steady_clock::now() + forwarded.max_total};
    const auto id = pending_.add(std::move(call), forwarded.caller_cap);
    if (!id) return reply_status(call_id, ipc::CallStatus::kOverloaded);
    PendingCall& pending = *pending_.find(*id);
    std::string params = std::move(forwarded.params_json);
    pending.progress_token = take_progress_token(params, *id);
    arm_deadline(*id, forwarded.timeout);
    std::string frame = R"({"id":)" + std::to_string(*id) + R"(,"jsonrpc":"2.0","method":)" +
                        json(forwarded.method).dump() + R"(,"params":)" + params + "}";
    enqueue(std::move(frame), /*droppable=*/false);
    hooks_.status_changed();
  }

  void cancel(std::uint64_t call_id, const std::string& reason) override {
    const auto id = pending_.find_by_call_id(call_id);
    if (!id) return;
    end_early(*id, reason);  // its late reply will find no entry and be dropped
  }

  void delivered(std::uint64_t call_id) override {
    pending_.delivered(call_id);
    hooks_.status_changed();
  }

  void answer(std::uint64_t call_id, std::uint64_t key,
              std::string_view response_without_id) override {
    const auto found = routed_.find(key);
    if (found == routed_.end()) return;
    const PendingCall* call = pending_.find(found->second.pending_id);
    if (!call || call->call_id != call_id) return;
    // The supervisor sends {"jsonrpc":"2.0","result"|"error":...}: the id goes in front.
    if (response_without_id.size() < 3 || response_without_id.front() != '{') return;
    std::string frame =
        R"({"id":)" + found->second.original_id + "," + std::string(response_without_id.substr(1));
    routed_.erase(found);
    enqueue(std::move(frame), /*droppable=*/false);
  }

  void close(std::uint16_t code) override { begin_close(code, /*send_frame=*/true); }

  void reconfigure(const std::string& computer, bool sole_client) override {
    settings_.computer = computer;
    settings_.sole_client = sole_client;
  }

  bool live() const override { return phase_ == Phase::kHandshaking || phase_ == Phase::kReady; }

  const SessionSettings& settings() const override { return settings_; }

  ipc::ComputerStatus status() const override {
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
    status.offers_logging = offers_logging_;
    return status;
  }

 private:
  enum class Phase { kUpgrading, kHandshaking, kReady, kClosing, kEnded };

  // ---- lifecycle ----

  void install() {
    phase_ = Phase::kHandshaking;
    attached_at_ms_ = wall_clock_ms();
    attached_at_ = std::chrono::steady_clock::now();
    read_next();
    schedule_tick();
    send_handshake();
    hooks_.status_changed();
  }

  void begin_close(std::uint16_t code, bool send_frame) {
    if (phase_ == Phase::kClosing || phase_ == Phase::kEnded) return;
    const bool upgraded = phase_ != Phase::kUpgrading;
    close_code_ = code;
    phase_ = Phase::kClosing;
    fail_all_pending();
    outbox_.clear();
    tick_timer_.cancel();
    hooks_.status_changed();
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

  void drop_connection() {
    beast::error_code ignored;
    beast::get_lowest_layer(ws_).shutdown(tcp::socket::shutdown_both, ignored);
    beast::get_lowest_layer(ws_).close(ignored);
  }

  // The read loop has stopped: the session is over whatever ended it (docs/protocol.md,
  // "Session end").
  void finish(std::uint16_t code_if_unclosed) {
    if (phase_ == Phase::kEnded) return;
    if (phase_ != Phase::kClosing) {
      close_code_ = code_if_unclosed;
      phase_ = Phase::kClosing;
      fail_all_pending();
      outbox_.clear();
    }
    phase_ = Phase::kEnded;
    tick_timer_.cancel();
    flush_timer_.cancel();
    drop_connection();
    const std::uint16_t code = close_code_.value_or(close_code::kNormal);
    const auto attached_for = std::chrono::duration_cast<std::chrono::seconds>(
                                  std::chrono::steady_clock::now() - attached_at_)
                                  .count();
    hooks_.audit(json{{"event", "vm_detach"},
                      {"peer", settings_.peer},
                      {"generation", settings_.generation},
                      {"code", code},
                      {"reason", close_reason_text(code)},
                      {"attached_for_secs", attached_for}});
    log_info("computer detached", {{"computer", settings_.computer},
                                   {"peer", settings_.peer},
                                   {"generation", std::to_string(settings_.generation)},
                                   {"code", std::to_string(code)}});
    hooks_.status_changed();
    hooks_.ended();
  }

  // The upgrade never completed: no attach happened, so there is nothing to audit.
  void finish_unupgraded() {
    phase_ = Phase::kEnded;
    drop_connection();
    hooks_.ended();
  }

  void fail_all_pending() {
    routed_.clear();
    for (auto& call : pending_.take_all()) {
      if (!call.handshake) reply_status(call.call_id, ipc::CallStatus::kDisconnected);
    }
  }

  // A call ends before its reply: its share is free now, and the computer is told to stop
  // working on it (docs/protocol.md, "Cancellation").
  void end_early(std::uint64_t id, std::string_view reason) {
    auto call = pending_.take(id);
    if (!call) return;
    forget_routed(id);
    hooks_.status_changed();
    const json notification{{"jsonrpc", "2.0"},
                            {"method", "notifications/cancelled"},
                            {"params", {{"requestId", id}, {"reason", reason}}}};
    enqueue(notification.dump(), /*droppable=*/true);
  }

  void forget_routed(std::uint64_t pending_id) {
    std::erase_if(routed_,
                  [&](const auto& entry) { return entry.second.pending_id == pending_id; });
  }

  // ---- reading ----

  void read_next() {
    ws_.async_read(read_buffer_, [self = shared_from_this()](beast::error_code error, std::size_t) {
      self->on_read(error);
    });
  }

  void on_read(beast::error_code error) {
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
    if (phase_ != Phase::kEnded) read_next();
  }

  void handle_message(std::string_view text) {
    const auto scanned = scan_message(text, jsonrpc::kMaxNesting);
    if (!scanned) return refuse_frame();
    if (scanned->is_response) return handle_response(*scanned, text);
    // Requests and notifications from the computer are rare and small, so the tree is built
    // after all.
    const json message = json::parse(text, nullptr, /*allow_exceptions=*/false);
    const auto method = message.find("method");
    if (method == message.end() || !method->is_string()) return refuse_frame();
    if (scanned->has_id) return handle_request_from_computer(*scanned, text, message);
    handle_notification(method->get_ref<const std::string&>(), message);
  }

  // Two messages in one frame, a bare array, a scalar: refused, and the calls it might
  // have answered keep waiting for a proper reply.
  void refuse_frame() {
    if (const auto count = refused_frames_.due()) {
      log_warn("computer sent a frame that is not exactly one JSON-RPC message; refused",
               {{"computer", settings_.computer}, {"count", std::to_string(*count)}});
    }
  }

  // A reply no call waits for: late (its call timed out or was cancelled), repeated, or
  // for an id the switchboard never sent. Dropped, and counted in the log.
  void drop_stray_reply() {
    if (const auto count = stray_replies_.due()) {
      log_warn("computer sent a reply no call waits for (late, repeated or unknown id); dropped",
               {{"computer", settings_.computer}, {"count", std::to_string(*count)}});
    }
  }

  void handle_notification(const std::string& method, const json& message) {
    if (method == "notifications/progress") return relay_progress(message);
    // A task's owner is known to the supervisor alone; call id 0 names no call.
    if (method == "notifications/tasks/status") {
      return hooks_.message(0, ipc::MessageMeta{ipc::MessageKind::kNotification}, message.dump());
    }
    // No token or id names a caller: only when one client can reach the computer at all
    // may such a message go to a caller, its newest call's.
    const auto newest = pending_.newest_call();
    const PendingCall* call = newest ? pending_.find(*newest) : nullptr;
    if (!settings_.sole_client || !call || !call->stream) return drop_message(method);
    hooks_.message(call->call_id, ipc::MessageMeta{ipc::MessageKind::kNotification},
                   message.dump());
  }

  void relay_progress(json message) {
    const auto params = message.find("params");
    if (params == message.end() || !params->is_object())
      return drop_message("notifications/progress");
    const auto token = params->find("progressToken");
    PendingCall* call = nullptr;
    if (token != params->end() && token->is_number_unsigned()) {
      const auto id = token->get<std::uint64_t>();
      call = pending_.find(id);
      if (call && !call->progress_token.empty()) restart_deadline(*call);
    }
    if (!call || call->progress_token.empty()) return drop_message("notifications/progress");
    // Sent even when the caller cannot take it: the supervisor's backstop restarts too.
    *token = json::parse(call->progress_token);
    hooks_.message(call->call_id, ipc::MessageMeta{ipc::MessageKind::kProgress}, message.dump());
  }

  void drop_message(std::string_view method) {
    if (hooks_.message_dropped) hooks_.message_dropped();
    if (const auto count = dropped_messages_.due()) {
      log_info("dropped messages from the computer that no caller could take",
               {{"computer", settings_.computer},
                {"method", std::string(method)},
                {"count", std::to_string(*count)}});
    }
  }

  void handle_response(const ScannedMessage& scanned, std::string_view text) {
    auto call = scanned.id ? pending_.take(*scanned.id) : std::nullopt;
    if (!call) return drop_stray_reply();
    forget_routed(*scanned.id);
    hooks_.status_changed();
    if (call->handshake) return on_handshake_reply(json::parse(text, nullptr, false));
    ipc::CallOutcome outcome{ipc::CallStatus::kReplied, text.size(), scanned.kind,
                             scanned.error_code};
    // The reply may wait in the supervisor for a slow caller: until it has left, the call
    // keeps its place, so that max_inflight bounds replies held as well as calls running.
    pending_.hold_until_delivered(call->call_id, call->caller);
    hooks_.reply(call->call_id, outcome, without_id(text, scanned));
  }

  // A request goes to a caller only when its owner is certain: a server asks while it
  // serves a request, so with exactly one call in flight it is that call's.
  void handle_request_from_computer(const ScannedMessage& scanned, std::string_view text,
                                    const json& message) {
    const json& id = message.at("id");
    if (message.at("method") == "ping") {
      return enqueue(jsonrpc::result_response(id, json::object()).dump(), /*droppable=*/true);
    }
    const auto only = pending_.only_call();
    const PendingCall* call = only ? pending_.find(*only) : nullptr;
    if (!call || !call->stream || routed_.size() >= kMaxRoutedRequests) {
      const auto refusal = jsonrpc::error_response(id, jsonrpc::kMethodNotFound,
                                                   "no caller can answer this request");
      return enqueue(refusal.dump(), /*droppable=*/true);
    }
    const std::uint64_t key = next_route_key_++;
    routed_.emplace(key, RoutedRequest{*only, id.dump()});
    hooks_.message(call->call_id, ipc::MessageMeta{ipc::MessageKind::kRequest, key},
                   without_id(text, scanned));
  }

  // ---- the MCP handshake (docs/protocol.md, "Handshake") ----

  void send_handshake() {
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

  void on_handshake_reply(const json& reply) {
    const auto result = reply.find("result");
    if (result == reply.end()) {
      log_warn("computer refused initialize",
               {{"peer", settings_.peer}, {"response", reply.dump()}});
      return close(close_code::kHandshakeFailed);
    }
    const auto server = result->is_object() ? result->find("serverInfo") : result->end();
    server_json_ = (result->is_object() && server != result->end()) ? server->dump() : "null";
    const auto capabilities = result->is_object() ? result->find("capabilities") : result->end();
    offers_logging_ = result->is_object() && capabilities != result->end() &&
                      capabilities->is_object() && capabilities->contains("logging");
    enqueue(R"({"jsonrpc":"2.0","method":"notifications/initialized"})", /*droppable=*/false);
    phase_ = Phase::kReady;
    hooks_.status_changed();
  }

  // ---- deadlines ----

  void arm_deadline(std::uint64_t id, std::chrono::milliseconds timeout) {
    PendingCall* call = pending_.find(id);
    const auto first =
        call->handshake ? std::chrono::steady_clock::now() + timeout
                        : std::min(std::chrono::steady_clock::now() + timeout, call->last_moment);
    // The deadline lives in the table: taking the entry withdraws it.
    call->deadline = deadlines_.add(first, [weak = weak_from_this(), id] {
      if (const auto self = weak.lock()) self->on_deadline(id);
    });
  }

  // Progress shows the computer is still at work: the call gets its whole timeout again,
  // but never past the moment its max_total allows.
  void restart_deadline(PendingCall& call) {
    call.deadline.move_to(
        std::min(std::chrono::steady_clock::now() + call.timeout, call.last_moment));
  }

  void on_deadline(std::uint64_t id) {
    PendingCall* call = pending_.find(id);
    if (!call) return;
    if (call->handshake) {
      pending_.take(id);
      hooks_.status_changed();
      if (phase_ == Phase::kClosing || phase_ == Phase::kEnded) return;
      log_warn("initialize toward the computer failed",
               {{"peer", settings_.peer}, {"error", "no answer within 15 s"}});
      return close(close_code::kHandshakeFailed);
    }
    const std::uint64_t call_id = call->call_id;
    end_early(id, "timed out");
    reply_status(call_id, ipc::CallStatus::kTimeout);
  }

  void reply_status(std::uint64_t call_id, ipc::CallStatus status) {
    hooks_.reply(call_id, ipc::CallOutcome{status, 0}, std::string());
  }

  // ---- writing ----

  void enqueue(std::string text, bool droppable) {
    if (phase_ == Phase::kClosing || phase_ == Phase::kEnded) return;
    if (droppable && outbox_.size() >= kOutboxLimit) return;
    outbox_.push_back(Outgoing{std::move(text), false});
    if (!writing_) write_next();
  }

  void enqueue_ping() {
    if (outbox_.size() >= kOutboxLimit) return;
    outbox_.push_back(Outgoing{std::string(), true});
    if (!writing_) write_next();
  }

  void write_next() {
    if (outbox_.empty() || phase_ == Phase::kClosing || phase_ == Phase::kEnded) {
      writing_ = false;
      return;
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

  // ---- liveness (docs/protocol.md, "Liveness") ----

  void schedule_tick() {
    tick_timer_.expires_after(settings_.ping_interval);
    tick_timer_.async_wait([self = shared_from_this()](beast::error_code error) {
      if (!error) self->on_tick();
    });
  }

  void on_tick() {
    if (!live()) return;
    if (++silent_ticks_ >= kSilentTicksBeforeDrop) {
      log_info("computer silent past the ping budget", {{"peer", settings_.peer}});
      return close(close_code::kSilent);
    }
    enqueue_ping();
    schedule_tick();
  }

  struct Outgoing {
    std::string text;
    bool ping = false;
  };

  struct RoutedRequest {
    std::uint64_t pending_id = 0;  // the call it was routed to
    std::string original_id;       // the computer's id, as JSON text
  };

  websocket::stream<tcp::socket> ws_;
  std::string upgrade_bytes_;
  SessionSettings settings_;
  SessionHooks hooks_;
  Phase phase_ = Phase::kUpgrading;
  PendingCalls pending_;
  beast::flat_buffer read_buffer_;
  std::deque<Outgoing> outbox_;
  bool writing_ = false;
  net::steady_timer tick_timer_;
  net::steady_timer flush_timer_;
  DeadlineQueue deadlines_;  // of the calls in pending_, on one timer
  int silent_ticks_ = 0;
  std::optional<std::uint16_t> close_code_;
  std::chrono::steady_clock::time_point attached_at_{};
  std::int64_t attached_at_ms_ = 0;
  std::string server_json_ = "null";
  bool offers_logging_ = false;
  std::map<std::uint64_t, RoutedRequest> routed_;  // by key
  std::uint64_t next_route_key_ = 1;
  LogThrottle refused_frames_;
  LogThrottle dropped_messages_;
  LogThrottle stray_replies_;
};

}  // namespace

std::shared_ptr<ComputerSession> start_session(
    net::io_context& io, base::UniqueFd socket, std::string upgrade_bytes, SessionSettings settings,
    SessionHooks hooks, std::function<void(std::shared_ptr<ComputerSession>)> installed) {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  ::getsockname(socket.get(), reinterpret_cast<sockaddr*>(&address), &length);
  const tcp protocol = address.ss_family == AF_INET6 ? tcp::v6() : tcp::v4();
  tcp::socket stream(io, protocol, socket.release());
  auto session = std::make_shared<Session>(io, std::move(stream), std::move(upgrade_bytes),
                                           std::move(settings), std::move(hooks));
  session->begin(std::move(installed));
  return session;
}

}  // namespace sb::worker
