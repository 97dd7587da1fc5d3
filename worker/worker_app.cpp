#include "worker/worker_app.hpp"

#include <unistd.h>

#include <csignal>
#include <limits>
#include <type_traits>
#include <utility>

#include "shared/log.hpp"

namespace sb::worker {

using json = nlohmann::json;
using namespace std::chrono_literals;

namespace {

json parse_meta(const ipc::Frame& frame) {
  return json::parse(frame.meta, nullptr, false);
}

// A field of the supervisor's meta, or `fallback` when it is absent or not a T. Numbers
// are taken only when they are integers that fit: a float converted to an int out of its
// range would be undefined behaviour.
template <typename T>
T meta_value(const json& meta, const char* key, T fallback) {
  const auto found = meta.is_object() ? meta.find(key) : meta.end();
  if (found == meta.end()) return fallback;
  if constexpr (std::is_same_v<T, bool>) {
    return found->is_boolean() ? found->get<bool>() : fallback;
  } else if constexpr (std::is_integral_v<T>) {
    if (found->is_number_unsigned()) {
      const auto number = found->get<std::uint64_t>();
      return number <= static_cast<std::uint64_t>(std::numeric_limits<T>::max())
                 ? static_cast<T>(number)
                 : fallback;
    }
    if (!found->is_number_integer()) return fallback;
    const auto number = found->get<std::int64_t>();
    return std::in_range<T>(number) ? static_cast<T>(number) : fallback;
  } else {
    return found->is_string() ? found->get<T>() : fallback;
  }
}

}  // namespace

WorkerApp::WorkerApp(boost::asio::io_context& io, ipc::ChannelEnd channel,
                     const std::string& status_segment)
    : io_(io),
      channel_(std::make_shared<ipc::Channel>(io, std::move(channel))),
      status_(status_segment),
      pid_(::getpid()),
      heartbeat_timer_(io),
      termination_signals_(io, SIGTERM, SIGINT) {}

void WorkerApp::start() {
  publish();
  beat();
  channel_->start([this](ipc::Frame&& frame) { on_frame(std::move(frame)); },
                  [this](const std::string&) {
                    // The supervisor is gone: nobody can use this computer any more.
                    leave(close_code::kGoingAway);
                  });
  channel_->send(ipc::Frame{
      .type = ipc::FrameType::kHello,
      .meta = json{{"pid", pid_}, {"protocol", ipc::kProtocolVersion}, {"build", ipc::build_id()}}
                  .dump()});
  termination_signals_.async_wait([this](const boost::system::error_code& error, int) {
    if (!error) leave(close_code::kGoingAway);
  });
}

void WorkerApp::on_frame(ipc::Frame&& frame) {
  switch (frame.type) {
    case ipc::FrameType::kConfigure:
      return on_configure(frame);
    case ipc::FrameType::kAttach:
      return on_attach(std::move(frame));
    case ipc::FrameType::kCall:
      return on_call(std::move(frame));
    case ipc::FrameType::kCancel:
      if (current_) {
        current_->cancel(frame.call_id,
                         meta_value<std::string>(parse_meta(frame), "reason", "cancelled"));
      }
      return;
    case ipc::FrameType::kAnswer:
      if (current_) {
        current_->answer(frame.call_id, meta_value<std::uint64_t>(parse_meta(frame), "key", 0),
                         frame.body);
      }
      return;
    case ipc::FrameType::kDelivered:
      if (current_) current_->delivered(frame.call_id);
      return;
    case ipc::FrameType::kRevoke:  // the supervisor wrote the vm_revoked line
      return leave(close_code::kRevoked);
    case ipc::FrameType::kShutdown:
      return leave(close_code::kGoingAway);
    default:
      log_warn("worker ignored an unexpected frame", {{"type", std::to_string(int(frame.type))}});
  }
}

void WorkerApp::on_configure(const ipc::Frame& frame) {
  const json meta = parse_meta(frame);
  computer_ = meta_value<std::string>(meta, "name", computer_);
  next_max_inflight_ = meta_value<int>(meta, "max_inflight", next_max_inflight_);
  sole_client_ = meta_value<bool>(meta, "sole_client", sole_client_);
  timings_.handshake = std::chrono::milliseconds(
      meta_value<std::int64_t>(meta, "handshake_ms", timings_.handshake.count()));
  timings_.ping_interval = std::chrono::milliseconds(
      meta_value<std::int64_t>(meta, "ping_interval_ms", timings_.ping_interval.count()));
  timings_.heartbeat = std::chrono::milliseconds(
      meta_value<std::int64_t>(meta, "heartbeat_ms", timings_.heartbeat.count()));
  if (current_) current_->reconfigure(computer_, sole_client_);
}

void WorkerApp::on_attach(ipc::Frame&& frame) {
  if (leaving_ || !frame.fd.valid()) return;  // the descriptor closes with the frame
  const json meta = parse_meta(frame);
  SessionSettings settings{
      .computer = computer_,
      .generation = meta_value<std::uint64_t>(meta, "generation", 0),
      .max_inflight = meta_value<int>(meta, "max_inflight", next_max_inflight_),
      .peer = meta_value<std::string>(meta, "peer", ""),
      .sole_client = sole_client_,
      .handshake_timeout = timings_.handshake,
      .ping_interval = timings_.ping_interval,
  };
  ++open_sessions_;
  // The ended hook names its own session so that the worker clears only that one.
  auto session_slot = std::make_shared<const ComputerSession*>(nullptr);
  SessionHooks hooks{
      .reply = [this](std::uint64_t call_id, const ipc::CallOutcome& outcome,
                      std::string body) { send_reply(call_id, outcome, std::move(body)); },
      .message = [this](std::uint64_t call_id, const ipc::MessageMeta& meta,
                        std::string body) { send_message(call_id, meta, std::move(body)); },
      .audit = [this](json event) { audit(std::move(event)); },
      .status_changed = [this] { publish(); },
      .message_dropped =
          [this] {
            ++messages_dropped_;
            publish();
          },
      .ended = [this, session_slot] { on_session_ended(*session_slot); },
  };
  auto session = start_session(
      io_, std::move(frame.fd), std::move(frame.body), std::move(settings), std::move(hooks),
      [this](std::shared_ptr<ComputerSession> installed) { on_installed(installed); });
  *session_slot = session.get();
}

void WorkerApp::on_installed(const std::shared_ptr<ComputerSession>& session) {
  const auto& settings = session->settings();
  if (leaving_) return session->close(close_code::kGoingAway);
  if (current_ && current_->live()) {
    const auto& old = current_->settings();
    audit(json{{"event", "vm_takeover"},
               {"old_peer", old.peer},
               {"old_generation", old.generation},
               {"new_peer", settings.peer},
               {"new_generation", settings.generation}});
    current_->close(close_code::kReplaced);
  }
  current_ = session;
  audit(json{{"event", "vm_attach"}, {"peer", settings.peer}, {"generation", settings.generation}});
  log_info("computer attached", {{"computer", settings.computer},
                                 {"peer", settings.peer},
                                 {"generation", std::to_string(settings.generation)}});
  publish();
}

void WorkerApp::on_session_ended(const ComputerSession* session) {
  --open_sessions_;
  // Only this very socket is cleared: a successor installed by takeover is never touched.
  if (current_ && current_.get() == session) current_.reset();
  publish();
  if (leaving_) stop_when_idle();
}

void WorkerApp::on_call(ipc::Frame&& frame) {
  auto meta = ipc::decode_call_meta(frame.meta);
  if (!meta) {
    // Only another build's supervisor could send this, and kHello rules that out.
    log_error("a call from the supervisor with a malformed meta", {});
    return send_reply(frame.call_id, ipc::CallOutcome{ipc::CallStatus::kDisconnected, 0}, {});
  }
  if (!current_ || leaving_) {
    return send_reply(frame.call_id, ipc::CallOutcome{ipc::CallStatus::kNotAttached, 0}, {});
  }
  current_->forward(ForwardedCall{
      .call_id = frame.call_id,
      .caller = std::move(meta->caller),
      .caller_cap = meta->caller_cap,
      .timeout = meta->timeout,
      .max_total = meta->max_total,
      .method = std::move(meta->method),
      .params_json = frame.body.empty() ? "{}" : std::move(frame.body),
      .stream = meta->stream,
  });
}

void WorkerApp::leave(std::uint16_t close_code) {
  if (leaving_) return;
  leaving_ = true;
  if (current_) current_->close(close_code);
  stop_when_idle();
}

void WorkerApp::stop_when_idle() {
  if (open_sessions_ > 0) return;
  heartbeat_timer_.cancel();
  termination_signals_.cancel();
  // Everything already said to the supervisor (the vm_detach line above all) goes first.
  channel_->flush([this] {
    channel_->close();
    io_.stop();
  });
}

void WorkerApp::publish() {
  ipc::ComputerStatus status = current_ ? current_->status() : ipc::ComputerStatus{};
  status.worker_pid = pid_;
  status.messages_dropped = messages_dropped_;
  status_.publish(status);
}

// The supervisor stamps the computer's name and the time on the line.
void WorkerApp::audit(json event) {
  channel_->send(ipc::Frame{.type = ipc::FrameType::kEvent, .body = event.dump()});
}

void WorkerApp::send_reply(std::uint64_t call_id, const ipc::CallOutcome& outcome,
                           std::string body) {
  channel_->send(ipc::Frame{.type = ipc::FrameType::kReply,
                            .call_id = call_id,
                            .meta = ipc::encode_outcome(outcome),
                            .body = std::move(body)});
}

void WorkerApp::send_message(std::uint64_t call_id, const ipc::MessageMeta& meta,
                             std::string body) {
  channel_->send(ipc::Frame{.type = ipc::FrameType::kMessage,
                            .call_id = call_id,
                            .meta = ipc::encode_message_meta(meta),
                            .body = std::move(body)});
}

void WorkerApp::beat() {
  status_.heartbeat();
  heartbeat_timer_.expires_after(timings_.heartbeat);
  heartbeat_timer_.async_wait([this](const boost::system::error_code& error) {
    if (!error) beat();
  });
}

}  // namespace sb::worker
