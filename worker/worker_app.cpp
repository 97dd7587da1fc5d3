#include "worker/worker_app.hpp"

#include <unistd.h>

#include <csignal>
#include <utility>
#include <variant>

#include "ipc/supervisor_frames.hpp"
#include "ipc/worker_frames.hpp"
#include "shared/log.hpp"

namespace sb::worker {

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
  channel_->send(ipc::encode(ipc::Hello{
      .pid = pid_, .protocol = ipc::kProtocolVersion, .build = std::string(ipc::build_id())}));
  termination_signals_.async_wait([this](const boost::system::error_code& error, int) {
    if (!error) leave(close_code::kGoingAway);
  });
}

// The supervisor's frames are read as strictly as a worker's: one out of contract could
// only come from another build, which the hello rules out, so the worker leaves rather
// than guess.
void WorkerApp::on_frame(ipc::Frame&& frame) {
  std::visit([this](auto&& decoded) { on(std::move(decoded)); },
             ipc::decode_supervisor_frame(std::move(frame)));
}

void WorkerApp::on(ipc::Malformed&& malformed) {
  log_error("the supervisor broke the IPC contract; leaving", {{"reason", malformed.reason}});
  leave(close_code::kGoingAway);
}

void WorkerApp::on(ipc::Configure&& configure) {
  computer_ = std::move(configure.computer);
  next_max_inflight_ = configure.max_inflight;
  sole_client_ = configure.sole_client;
  timings_.handshake = configure.handshake;
  timings_.ping_interval = configure.ping_interval;
  timings_.heartbeat = configure.heartbeat;
  if (current_) current_->reconfigure(computer_, sole_client_);
}

void WorkerApp::on(ipc::Attach&& attach) {
  if (leaving_) return;  // the descriptor closes with the frame
  SessionSettings settings{
      .computer = computer_,
      .generation = attach.generation,
      .max_inflight = attach.max_inflight,
      .peer = std::move(attach.peer),
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
      .audit = [this](ipc::SessionEvent event) { audit(event); },
      .status_changed = [this] { publish(); },
      .message_dropped =
          [this] {
            ++messages_dropped_;
            publish();
          },
      .ended = [this, session_slot] { on_session_ended(*session_slot); },
  };
  auto session = start_session(
      io_, std::move(attach.socket), std::move(attach.upgrade_bytes), std::move(settings),
      std::move(hooks),
      [this](std::shared_ptr<ComputerSession> installed) { on_installed(installed); });
  *session_slot = session.get();
}

void WorkerApp::on(ipc::Call&& call) {
  if (!current_ || leaving_) {
    return send_reply(call.call_id, ipc::CallOutcome{ipc::CallStatus::kNotAttached, 0}, {});
  }
  current_->forward(ForwardedCall{
      .call_id = call.call_id,
      .caller = std::move(call.meta.caller),
      .caller_cap = call.meta.caller_cap,
      .timeout = call.meta.timeout,
      .max_total = call.meta.max_total,
      .method = std::move(call.meta.method),
      .params_json = call.params.empty() ? "{}" : std::move(call.params),
      .stream = call.meta.stream,
  });
}

void WorkerApp::on(ipc::Cancel&& cancel) {
  if (current_) current_->cancel(cancel.call_id, cancel.reason);
}

void WorkerApp::on(ipc::Answer&& answer) {
  if (current_) current_->answer(answer.call_id, answer.key, answer.response_without_id);
}

void WorkerApp::on(ipc::Delivered&& delivered) {
  if (current_) current_->delivered(delivered.call_id);
}

void WorkerApp::on(ipc::Revoke&&) {
  leave(close_code::kRevoked);  // the supervisor wrote the vm_revoked line
}

void WorkerApp::on(ipc::Shutdown&&) {
  leave(close_code::kGoingAway);
}

void WorkerApp::on_installed(const std::shared_ptr<ComputerSession>& session) {
  const auto& settings = session->settings();
  if (leaving_) return session->close(close_code::kGoingAway);
  if (current_ && current_->live()) {
    const auto& old = current_->settings();
    audit(ipc::TakeoverEvent{.old_peer = old.peer,
                             .old_generation = old.generation,
                             .new_peer = settings.peer,
                             .new_generation = settings.generation});
    current_->close(close_code::kReplaced);
  }
  current_ = session;
  audit(ipc::AttachEvent{.peer = settings.peer, .generation = settings.generation});
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
void WorkerApp::audit(const ipc::SessionEvent& event) {
  channel_->send(ipc::encode(event));
}

void WorkerApp::send_reply(std::uint64_t call_id, const ipc::CallOutcome& outcome,
                           std::string body) {
  channel_->send(ipc::encode(ipc::Reply{call_id, outcome, std::move(body)}));
}

void WorkerApp::send_message(std::uint64_t call_id, const ipc::MessageMeta& meta,
                             std::string body) {
  channel_->send(ipc::encode(ipc::Message{call_id, meta, std::move(body)}));
}

void WorkerApp::beat() {
  status_.heartbeat();
  heartbeat_timer_.expires_after(timings_.heartbeat);
  heartbeat_timer_.async_wait([this](const boost::system::error_code& error) {
    if (!error) beat();
  });
}

}  // namespace sb::worker
