// Session: the ComputerSession of one attached computer (computer_session.hpp), its member
// functions in files by seam: the socket's life (upgrade, MCP handshake, writing,
// liveness, close) in computer_session.cpp; calls, replies and the computer's own messages
// in session_calls.cpp; a 2026-only computer's input-required results asked of the caller
// in session_asking.cpp, and its subscriptions in session_listening.cpp; tasks across eras
// in session_tasks.cpp; its part in a switch in place in session_switching.cpp. Included
// by those six alone.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "base/asio_names.hpp"
#include "shared/deadline_queue.hpp"
#include "shared/log.hpp"
#include "worker/computer_session.hpp"
#include "worker/pending_calls.hpp"
#include "worker/reply_scan.hpp"
#include "worker/session_socket.hpp"

namespace sb::worker {

using namespace sb::asio_names;
using json = nlohmann::json;

// Requests from the computer waiting for their caller's answer; past this the computer is
// answered -32601 at once. A tool asks a question or two, not hundreds.
inline constexpr std::size_t kMaxRoutedRequests = 16;

// The computer's socket, handed over as a descriptor, as the session's stream needs it.
tcp::socket adopt_tcp_socket(net::io_context& io, base::UniqueFd socket);

class Session final : public ComputerSession, public std::enable_shared_from_this<Session> {
 public:
  // `upgrade_request`: the upgrade request alone; what followed it is in `socket`.
  Session(net::io_context& io, SessionSocket socket, std::string upgrade_request,
          SessionSettings settings, SessionHooks hooks)
      : ws_(std::move(socket)),
        upgrade_request_(std::move(upgrade_request)),
        settings_(std::move(settings)),
        hooks_(std::move(hooks)),
        pending_(settings_.max_inflight),
        tick_timer_(io),
        flush_timer_(io),
        park_timer_(io),
        release_timer_(io),
        deadlines_(io) {}

  void begin(std::function<void(std::shared_ptr<ComputerSession>)> installed);
  void begin_taken_up(ipc::ParkedSession record, const std::vector<std::uint64_t>& taken_up,
                      std::function<void(std::shared_ptr<ComputerSession>)> installed);
  void forward(ForwardedCall forwarded) override;
  void cancel(std::uint64_t call_id, const std::string& reason) override;
  void delivered(std::uint64_t call_id) override;
  void answer(std::uint64_t call_id, std::uint64_t key,
              std::string_view response_without_id) override;
  void close(std::uint16_t code) override { begin_close(code, /*send_frame=*/true); }
  void reconfigure(const std::string& computer, bool sole_caller) override;
  void park(std::chrono::milliseconds drain,
            std::function<void(ipc::ParkedSession)> parked) override;
  bool live() const override { return phase_ == Phase::kHandshaking || phase_ == Phase::kReady; }
  const SessionSettings& settings() const override { return settings_; }
  ipc::ComputerStatus status() const override;

 private:
  // kParked: left for another worker (park()); like kEnded, nothing more happens.
  enum class Phase { kUpgrading, kHandshaking, kReady, kClosing, kEnded, kParked };
  // Closing, ended or parked: nothing more is written.
  bool stopped() const {
    return phase_ == Phase::kClosing || phase_ == Phase::kEnded || phase_ == Phase::kParked;
  }

  // ---- lifecycle ----

  void configure_stream();
  void install();
  void begin_close(std::uint16_t code, bool send_frame);
  void drop_connection();
  void finish(std::uint16_t code_if_unclosed);
  void finish_unupgraded();
  void fail_all_pending();
  void end_early(std::uint64_t id, std::string_view reason);
  void forget_routed(std::uint64_t pending_id);

  // ---- switching (docs/architecture.md, "Switching") ----

  void try_park();
  void give_up_parking();
  ipc::ParkedSession take_record();
  void restore(ipc::ParkedSession record, const std::vector<std::uint64_t>& taken_up);

  // ---- reading ----

  void read_next();
  void on_read(beast::error_code error);
  void read_on();
  void release_read_buffer_when_idle();
  void handle_message(std::string_view text);
  void refuse_frame();
  void drop_stray_reply();
  void handle_notification(const std::string& method, json message);
  void relay_progress(json message);
  void drop_message(std::string_view method);
  void handle_response(const ScannedMessage& scanned, std::string_view text);
  void handle_request_from_computer(const ScannedMessage& scanned, std::string_view text,
                                    const json& message);
  void follow_request_log_level(std::string_view method, std::string_view params);
  bool take_quiet_reply(std::uint64_t id);

  // ---- a 2026-only computer's input-required result, asked of its caller
  //      (session_asking.cpp; docs/protocol.md, "Input required") ----

  bool ask_caller(PendingCall& call, std::string_view reply_text);
  bool ask_requests(PendingCall& call, const json& requests, json request_state);
  void answer_asked(std::uint64_t key, std::string_view response_without_id);
  void retry_asked(std::uint64_t id);
  void end_asked(std::uint64_t id, const json& error);
  void fail_asks_before_parking();

  // ---- tasks across eras (session_tasks.cpp; docs/protocol.md, "Tasks across eras") ----

  void begin_task_conversation(PendingCall& call, std::string& method, std::string_view params);
  bool follow_task(PendingCall& call, std::string_view reply_text);
  bool on_task_polled(PendingCall& call, const json& task);
  void poll_task_later(PendingCall call, std::chrono::milliseconds after);
  void poll_task(std::uint64_t id);
  void send_task_step(PendingCall call, std::string_view method, json params);
  void end_task_conversation(PendingCall call, const json& response);
  void fail_task_conversations_before_parking();
  json watch_task(const PendingCall& call, json task);
  bool hold_task_question(const json& message);
  bool answer_task_questions(const ForwardedCall& forwarded);
  bool end_task_watch(std::uint64_t result_id);
  void drop_task_watch(const std::string& task_id, std::string_view why);

  // ---- a 2026-only computer's subscriptions, kept as one subscriptions/listen
  //      (session_listening.cpp; docs/protocol.md, "Subscriptions") ----

  bool keeps_listen(const ForwardedCall& forwarded) const;
  void change_listen(ForwardedCall forwarded);
  bool wants_listen() const;
  void listen_from_the_start();
  void send_listen(std::uint64_t id);
  void on_listen_acknowledged(std::uint64_t id);
  bool take_listen_message(const std::string& method, json& message);
  void end_listen(std::uint64_t id);

  // ---- the MCP handshake (docs/protocol.md, "Handshake") ----

  void send_handshake();
  void on_handshake_reply(const json& reply);
  void send_discover();
  void on_discover_reply(const json& reply);
  void become_ready();

  // ---- deadlines ----

  void arm_deadline(std::uint64_t id, std::chrono::milliseconds timeout);
  void set_deadline(std::uint64_t id, std::chrono::steady_clock::time_point at);
  void restart_deadline(PendingCall& call);
  void on_deadline(std::uint64_t id);
  // An outcome with no reply; `sent_unix_nanos` when the call had been sent.
  void reply_status(std::uint64_t call_id, ipc::CallStatus status,
                    std::uint64_t sent_unix_nanos = 0);
  // A reply the worker writes itself (`response` with a null id, which is cut out).
  void reply_written(std::uint64_t call_id, const json& response);

  // ---- writing ----

  void enqueue(std::string text, bool droppable);
  void enqueue_ping();
  void write_next();

  // ---- liveness (docs/protocol.md, "Liveness") ----

  void schedule_tick();
  void on_tick();

  struct Outgoing {
    std::string text;
    bool ping = false;
  };

  struct RoutedRequest {
    std::uint64_t pending_id = 0;  // the call it was routed to
    std::string original_id;       // the computer's id, as JSON text
    std::string input_key;         // instead, a key of an input-required result's requests
  };

  // What a 2026-only computer asked a call's caller in an input-required result, until
  // every answer is in and the call is retried with them.
  struct AskRound {
    nlohmann::json answers = nlohmann::json::object();  // by input key
    nlohmann::json request_state;                       // as the computer gave it; null: none
    std::size_t waiting = 0;
  };

  // A handshake-era computer's task that asks during its run, for a 2026-07-28 caller
  // (session_tasks.cpp): the computer asks through tasks/result, which the worker calls for
  // it, and its questions wait here for the caller's tasks/update.
  struct TaskQuestion {
    std::string computer_id;  // the computer's request id, as JSON text
    json request;             // {"method", "params"} as an inputRequests entry has it
  };
  struct TaskWatch {
    std::uint64_t result_id = 0;                    // the worker's tasks/result at the computer
    std::map<std::string, TaskQuestion> questions;  // by input key
    DeadlineQueue::Deadline expiry;
  };

  websocket::stream<SessionSocket> ws_;
  std::string upgrade_request_;
  SessionSettings settings_;
  SessionHooks hooks_;
  Phase phase_ = Phase::kUpgrading;
  PendingCalls pending_;
  beast::flat_buffer read_buffer_;
  bool reading_paused_ = false;  // the worker held too much for the supervisor (has_room)
  std::deque<Outgoing> outbox_;
  bool writing_ = false;
  net::steady_timer tick_timer_;
  net::steady_timer flush_timer_;
  net::steady_timer park_timer_;     // the drain a park() may take
  net::steady_timer release_timer_;  // gives a large read buffer's pages back once idle
  std::function<void(ipc::ParkedSession)> on_parked_;  // set while parking
  DeadlineQueue deadlines_;                            // of the calls in pending_, on one timer
  int silent_ticks_ = 0;
  std::optional<std::uint16_t> close_code_;
  std::chrono::steady_clock::time_point attached_at_{};
  std::int64_t attached_at_ms_ = 0;
  std::string server_json_ = "null";
  std::uint32_t offers_ = 0;  // ipc::offer:: bits
  bool discovering_ = false;  // initialize was refused; server/discover is asked instead
  std::string log_level_;     // set by logging/setLevel, for a computer that speaks only 2026
  // The level last set on a handshake-era computer, and the ids of the worker's own
  // logging/setLevel whose answers nobody waits for (the newest few).
  std::string computer_log_level_;
  std::deque<std::uint64_t> quiet_replies_;
  // What a computer that speaks only 2026 follows for the supervisor: the URIs subscribed
  // (besides the list changes it offers), the listen sent for them last, and the
  // acknowledged one updates are taken from (ids on the socket; 0: none).
  std::set<std::string, std::less<>> listened_uris_;
  std::uint64_t newest_listen_ = 0;
  std::uint64_t active_listen_ = 0;
  std::map<std::uint64_t, RoutedRequest> routed_;               // by key
  std::map<std::uint64_t, AskRound> asking_;                    // by the call's id on the socket
  std::map<std::string, TaskWatch, std::less<>> task_watches_;  // by task id
  std::uint64_t next_question_key_ = 1;
  std::uint64_t next_route_key_ = 1;
  LogThrottle refused_frames_;
  LogThrottle dropped_messages_;
  LogThrottle stray_replies_;
};

}  // namespace sb::worker
