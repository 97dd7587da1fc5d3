#include "worker/worker_app.hpp"

#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <utility>
#include <variant>

#include "ipc/supervisor_frames.hpp"
#include "ipc/worker_frames.hpp"
#include "shared/log.hpp"

namespace sb::worker {

WorkerApp::WorkerApp(boost::asio::io_context& io, ipc::ChannelEnd channel,
                     const std::string& status_segment, base::UniqueFd record_file)
    : io_(io),
      channel_(std::make_shared<ipc::Channel>(io, std::move(channel))),
      status_(status_segment),
      pid_(::getpid()),
      heartbeat_timer_(io),
      heap_trimmer_(io),
      service_signals_(io, SIGTERM, SIGINT, SIGHUP),
      record_file_(std::move(record_file)) {
  service_signals_.add(SIGUSR1);
  service_signals_.add(SIGUSR2);
}

void WorkerApp::start() {
  publish();
  beat();
  heap_trimmer_.start();
  channel_->start([this](ipc::Frame&& frame) { on_frame(std::move(frame)); },
                  [this](const std::string& violation) { on_channel_closed(violation); });
  channel_->send(ipc::encode(ipc::Hello{
      .pid = pid_, .protocol = ipc::kProtocolVersion, .build = std::string(ipc::build_id())}));
  ignore_service_signals();
}

// A service manager signals every process of the service (`systemctl stop`, `restart`,
// `kill`), and after a crash of the supervisor it sends its workers SIGTERM before
// anything else: what a worker does is the supervisor's to say (kShutdown, kPark) or, once
// the supervisor is gone, on_supervisor_gone's. A signal neither ends it nor closes its
// computer.
void WorkerApp::ignore_service_signals() {
  service_signals_.async_wait([this](const boost::system::error_code& error, int) {
    if (!error) ignore_service_signals();
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
  sole_client_ = configure.sole_caller;
  timings_.handshake = configure.handshake;
  timings_.ping_interval = configure.ping_interval;
  timings_.heartbeat = configure.heartbeat;
  drain_ = configure.drain;
  max_buffer_bytes_ = configure.max_buffer_bytes;
  if (current_) current_->reconfigure(computer_, sole_client_);
}

SessionSettings WorkerApp::next_settings() const {
  return SessionSettings{
      .computer = computer_,
      .max_inflight = next_max_inflight_,
      .sole_caller = sole_client_,
      .handshake_timeout = timings_.handshake,
      .ping_interval = timings_.ping_interval,
  };
}

// The ended hook names its own session so that the worker clears only that one.
SessionHooks WorkerApp::hooks_for(std::shared_ptr<const ComputerSession*> session_slot) {
  return SessionHooks{
      .reply = [this](std::uint64_t call_id, const ipc::CallOutcome& outcome,
                      std::string body) { send_reply(call_id, outcome, std::move(body)); },
      .message = [this](std::uint64_t call_id, const ipc::MessageMeta& meta,
                        std::string body) { send_message(call_id, meta, std::move(body)); },
      .audit = [this](ipc::SessionEvent event) { audit(event); },
      .has_room =
          [this](std::function<void()> room) {
            if (channel_->queued_bytes() <= max_buffer_bytes_) return true;
            channel_->when_queued_at_most(max_buffer_bytes_, std::move(room));
            return false;
          },
      .status_changed = [this] { publish(); },
      .message_dropped =
          [this] {
            ++messages_dropped_;
            publish();
          },
      .ended = [this, session_slot] { on_session_ended(*session_slot); },
  };
}

void WorkerApp::on(ipc::Attach&& attach) {
  if (leaving_) return;  // the descriptor closes with the frame
  SessionSettings settings = next_settings();
  settings.generation = attach.generation;
  settings.max_inflight = attach.max_inflight;
  settings.peer = std::move(attach.peer);
  ++open_sessions_;
  auto session_slot = std::make_shared<const ComputerSession*>(nullptr);
  auto session = start_session(
      io_, std::move(attach.socket), std::move(attach.upgrade_bytes), std::move(settings),
      hooks_for(session_slot),
      [this](std::shared_ptr<ComputerSession> installed) { on_installed(installed); });
  *session_slot = session.get();
}

// A session parked by the worker before this one (docs/architecture.md, "Switching").
// The supervisor checked the record; one that still does not read could only come from a
// supervisor of another build, which the hello rules out.
void WorkerApp::on(ipc::TakeUp&& take_up) {
  std::string why;
  auto record = ipc::decode_parked_session(take_up.record, why);
  if (!record) {
    log_error("the supervisor handed over a session record that does not read; leaving",
              {{"reason", why}});
    return leave(close_code::kGoingAway);
  }
  if (leaving_ || current_ || taking_up_) return;  // the descriptor closes with the frame
  ++open_sessions_;
  auto session_slot = std::make_shared<const ComputerSession*>(nullptr);
  auto session =
      take_up_session(io_, std::move(take_up.socket), std::move(*record), take_up.taken_up_calls,
                      next_settings(), hooks_for(session_slot),
                      [this](std::shared_ptr<ComputerSession> taken_up) { on_taken_up(taken_up); });
  *session_slot = session.get();
  taking_up_ = session.get();
}

// Leaves the computer's session for the next worker, then exits. A worker with no live
// session says so at once; one whose session cannot stop at a boundary in time closes it
// with 1001 and says so when it has ended.
void WorkerApp::on(ipc::Park&& park) {
  if (parking_) return;
  parking_ = true;
  leaving_ = true;  // no new attach now
  if (current_ && current_->live()) {
    return current_->park(park.drain,
                          [this](ipc::ParkedSession record) { on_parked(std::move(record)); });
  }
  stop_when_idle();
}

// A channel that broke on what the supervisor sent is said before the worker goes: a
// supervisor that merely exited (or crashed) leaves no violation.
void WorkerApp::on_channel_closed(const std::string& violation) {
  if (!violation.empty()) return on(ipc::Malformed{violation});
  on_supervisor_gone();
}

// The supervisor died. Where a service manager keeps the computer's socket for the next
// supervisor (a record file was given), the session is parked into that file; otherwise
// nobody can use this computer any more.
void WorkerApp::on_supervisor_gone() {
  if (!record_file_.valid() || parking_) return leave(close_code::kGoingAway);
  orphaned_ = true;
  parking_ = true;
  leaving_ = true;
  if (!current_ || !current_->live()) return stop_when_idle();
  current_->park(drain_, [this](ipc::ParkedSession record) {
    write_record(record);
    --open_sessions_;
    current_.reset();
    stop_when_idle();
  });
}

// Its size, then the record: what the next supervisor reads (supervisor/switching/).
void WorkerApp::write_record(const ipc::ParkedSession& record) {
  const std::string bytes = ipc::encode(record);
  const std::uint64_t size = bytes.size();
  std::string file(reinterpret_cast<const char*>(&size), sizeof size);
  file += bytes;
  std::size_t written = 0;
  while (written < file.size()) {
    const auto wrote = ::write(record_file_.get(), file.data() + written, file.size() - written);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) {
      log_error("cannot write the parked session's record; its computer will dial again",
                {{"error", std::strerror(errno)}});
      return;
    }
    written += static_cast<std::size_t>(wrote);
  }
  log_info("computer parked for the next supervisor",
           {{"computer", computer_}, {"generation", std::to_string(record.generation)}});
}

void WorkerApp::on_parked(ipc::ParkedSession record) {
  log_info("computer parked for the switch", {{"computer", computer_},
                                              {"generation", std::to_string(record.generation)},
                                              {"calls", std::to_string(record.calls.size())}});
  parked_sent_ = true;
  channel_->send(ipc::encode(ipc::Parked{ipc::encode(record)}));
  // The socket stays open in the supervisor: the session is over here, not for the
  // computer.
  --open_sessions_;
  current_.reset();
  publish();
  stop_when_idle();
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
  if (taking_up_) {
    return after_take_up_.push_back(
        [this, cancel = std::move(cancel)]() mutable { on(std::move(cancel)); });
  }
  if (current_) current_->cancel(cancel.call_id, cancel.reason);
}

void WorkerApp::on(ipc::Answer&& answer) {
  if (taking_up_) {
    return after_take_up_.push_back(
        [this, answer = std::move(answer)]() mutable { on(std::move(answer)); });
  }
  if (current_) current_->answer(answer.call_id, answer.key, answer.response_without_id);
}

void WorkerApp::on(ipc::Delivered&& delivered) {
  if (taking_up_)
    return after_take_up_.push_back([this, delivered] { on(ipc::Delivered(delivered)); });
  if (current_) current_->delivered(delivered.call_id);
}

void WorkerApp::on(ipc::Revoke&&) {
  leave(close_code::kRevoked);  // the supervisor wrote the vm_revoked line
}

void WorkerApp::on(ipc::Shutdown&&) {
  leave(close_code::kGoingAway);
}

// The older of two sessions of this computer gives way to the newer.
void WorkerApp::audit_takeover(const SessionSettings& older, const SessionSettings& newer) {
  audit(ipc::TakeoverEvent{.old_peer = older.peer,
                           .old_generation = older.generation,
                           .new_peer = newer.peer,
                           .new_generation = newer.generation});
}

void WorkerApp::on_installed(const std::shared_ptr<ComputerSession>& session) {
  const auto& settings = session->settings();
  if (leaving_) return session->close(close_code::kGoingAway);
  if (current_ && current_->live()) {
    audit_takeover(current_->settings(), settings);
    current_->close(close_code::kReplaced);
  }
  current_ = session;
  audit(ipc::AttachEvent{.peer = settings.peer, .generation = settings.generation});
  log_info("computer attached", {{"computer", settings.computer},
                                 {"peer", settings.peer},
                                 {"generation", std::to_string(settings.generation)}});
  publish();
}

void WorkerApp::on_taken_up(const std::shared_ptr<ComputerSession>& session) {
  const auto& settings = session->settings();
  audit(ipc::TakenUpEvent{.peer = settings.peer, .generation = settings.generation});
  log_info("computer resumed", {{"computer", settings.computer},
                                {"peer", settings.peer},
                                {"generation", std::to_string(settings.generation)}});
  // The computer attached again meanwhile: the newer socket wins, as in any takeover.
  if (current_ && current_->live()) {
    audit_takeover(settings, current_->settings());
    session->close(close_code::kReplaced);
  } else {
    current_ = session;
  }
  taking_up_ = nullptr;
  for (auto& deferred : std::exchange(after_take_up_, {})) deferred();
  if (leaving_) session->close(close_code::kGoingAway);
  publish();
}

void WorkerApp::on_session_ended(const ComputerSession* session) {
  --open_sessions_;
  // A session that ended while being taken up: what waited for it waits for nothing.
  if (taking_up_ == session) {
    taking_up_ = nullptr;
    after_take_up_.clear();
  }
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
  if (parking_ && !parked_sent_ && !orphaned_) {
    parked_sent_ = true;
    channel_->send(ipc::encode(ipc::Parked{}));
  }
  heartbeat_timer_.cancel();
  heap_trimmer_.stop();
  service_signals_.cancel();
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
