// The worker process's one object: takes frames from the supervisor, owns the current
// computer session, publishes status and heartbeats, and decides when to exit.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/heap_trim.hpp"
#include "ipc/channel.hpp"
#include "ipc/session_events.hpp"
#include "ipc/status_board.hpp"
#include "ipc/supervisor_frames.hpp"
#include "shared/timings.hpp"
#include "worker/computer_session.hpp"

namespace sb::worker {

class WorkerApp {
 public:
  // `record_file`, when valid, is where the session is parked if the supervisor dies
  // (docs/architecture.md, "Switching"): the service manager keeps it with the computer's
  // socket for the next supervisor.
  WorkerApp(boost::asio::io_context& io, ipc::ChannelEnd channel, const std::string& status_segment,
            base::UniqueFd record_file = {});
  void start();

 private:
  void on_frame(ipc::Frame&& frame);
  void on(ipc::Malformed&& malformed);
  void on(ipc::Configure&& configure);
  void on(ipc::Attach&& attach);
  void on(ipc::Call&& call);
  void on(ipc::Cancel&& cancel);
  void on(ipc::Answer&& answer);
  void on(ipc::Delivered&& delivered);
  void on(ipc::Park&& park);
  void on(ipc::TakeUp&& take_up);
  void on(ipc::Revoke&&);
  void on(ipc::Shutdown&&);
  SessionSettings next_settings() const;
  SessionHooks hooks_for(std::shared_ptr<const ComputerSession*> session_slot);
  void on_installed(const std::shared_ptr<ComputerSession>& session);
  void on_taken_up(const std::shared_ptr<ComputerSession>& session);
  void on_parked(ipc::ParkedSession record);
  void on_channel_closed(const std::string& violation);
  void on_supervisor_gone();
  void write_record(const ipc::ParkedSession& record);
  void on_session_ended(const ComputerSession* session);
  void leave(std::uint16_t close_code);
  void stop_when_idle();
  void publish();
  void audit(const ipc::SessionEvent& event);
  void audit_takeover(const SessionSettings& older, const SessionSettings& newer);
  void send_reply(std::uint64_t call_id, const ipc::CallOutcome& outcome, std::string body);
  void send_message(std::uint64_t call_id, const ipc::MessageMeta& meta, std::string body);
  void beat();
  void ignore_service_signals();

  boost::asio::io_context& io_;
  std::shared_ptr<ipc::Channel> channel_;
  ipc::StatusWriter status_;
  const int pid_;  // looked up once: getpid() is a syscall and the status changes twice a call
  boost::asio::steady_timer heartbeat_timer_;
  base::HeapTrimmer heap_trimmer_;
  boost::asio::signal_set service_signals_;
  std::string computer_;
  int next_max_inflight_ = 8;
  Timings timings_;
  std::chrono::milliseconds drain_{0};            // to park the session when the supervisor is gone
  std::uint64_t max_buffer_bytes_ = 64ull << 20;  // held for the supervisor, at most
  bool sole_client_ = false;
  std::shared_ptr<ComputerSession> current_;
  int open_sessions_ = 0;
  std::uint64_t messages_dropped_ = 0;  // published on the status board, for /metrics
  bool leaving_ = false;
  // Switching (kPark): the kParked answer is owed until it is sent, with the session's
  // record or, when it had none to leave, empty.
  bool parking_ = false;
  bool parked_sent_ = false;
  base::UniqueFd record_file_;
  bool orphaned_ = false;  // the supervisor is gone; parking for the next one
  // A session being taken up (kTakeUp) and not installed yet: what the supervisor says
  // of its calls meanwhile (cancel, answer, delivered) waits for it.
  const ComputerSession* taking_up_ = nullptr;
  std::vector<std::function<void()>> after_take_up_;
};

}  // namespace sb::worker
