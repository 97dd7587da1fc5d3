// The southbound MCP session with one attached computer (docs/protocol.md, "Attach" to
// "Session end"): the switchboard is the MCP client on a WebSocket the computer dialled.
// Beast stays in the .cpp.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>

#include "base/unique_fd.hpp"
#include "ipc/messages.hpp"
#include "ipc/parked_session.hpp"
#include "ipc/session_events.hpp"
#include "ipc/status_board.hpp"
#include "shared/timings.hpp"

namespace sb::worker {

struct SessionSettings {
  std::string computer;  // the label now; reconfigure() changes it
  std::uint64_t generation = 0;
  int max_inflight = 8;  // fixed for the socket's life
  std::string peer;
  // Exactly one caller can reach this computer, so notifications that name no call may go
  // to that caller's newest call (docs/protocol.md, "Requests from the computer").
  bool sole_caller = false;
  // The product's values unless the tests shortened them (shared/timings.hpp).
  std::chrono::milliseconds handshake_timeout = Timings{}.handshake;
  std::chrono::milliseconds ping_interval = Timings{}.ping_interval;
};

// A request the supervisor forwards for one caller.
struct ForwardedCall {
  std::uint64_t call_id = 0;
  std::string caller;
  int caller_cap = 0;                            // 0: the default share
  std::chrono::milliseconds timeout{60'000};     // restarted by each progress notification
  std::chrono::milliseconds max_total{600'000};  // never exceeded, progress or not
  std::string method;
  std::string params_json;
  bool stream = false;  // the caller takes messages during the call
};

// What a session tells the worker.
struct SessionHooks {
  std::function<void(std::uint64_t call_id, const ipc::CallOutcome&, std::string body)> reply;
  // A message from the computer for the caller of `call_id`.
  std::function<void(std::uint64_t call_id, const ipc::MessageMeta&, std::string body)> message;
  std::function<void(ipc::SessionEvent event)> audit;
  // Whether what the worker holds for the supervisor is within its budget ([limits]
  // max_worker_buffer_mib). When it is not, the session reads its computer no further and
  // `room` runs once it is: the computer is read no faster than the supervisor takes
  // replies (docs/robustness.md, "Memory").
  std::function<bool(std::function<void()> room)> has_room;
  std::function<void()> status_changed;
  std::function<void()> message_dropped;  // a message from the computer no caller could take
  std::function<void()> ended;            // once, after cleanup and the vm_detach line
};

// WebSocket close codes the switchboard sends or records (docs/protocol.md, "Close codes").
namespace close_code {
inline constexpr std::uint16_t kNormal = 1000;
inline constexpr std::uint16_t kGoingAway = 1001;
inline constexpr std::uint16_t kProtocolError = 1002;
inline constexpr std::uint16_t kAbnormal = 1006;  // recorded only: nothing can be sent
inline constexpr std::uint16_t kInvalidPayload = 1007;
inline constexpr std::uint16_t kTooBig = 1009;
inline constexpr std::uint16_t kSilent = 1011;
inline constexpr std::uint16_t kReplaced = 4002;
inline constexpr std::uint16_t kRevoked = 4003;
inline constexpr std::uint16_t kHandshakeFailed = 4005;
}  // namespace close_code

class ComputerSession {
 public:
  virtual ~ComputerSession() = default;

  // A forwarded request; the outcome always comes back through hooks.reply, unless the
  // call is cancelled first.
  virtual void forward(ForwardedCall call) = 0;
  // The call ended early: forget it, release its share now, and tell the computer why.
  virtual void cancel(std::uint64_t call_id, const std::string& reason) = 0;
  // The caller's answer to the request routed to it as `key` during call `call_id`.
  virtual void answer(std::uint64_t call_id, std::uint64_t key,
                      std::string_view response_without_id) = 0;
  // The reply of call `call_id` has left the supervisor: its place in the caps is free.
  virtual void delivered(std::uint64_t call_id) = 0;
  // Closes with `code` unless a close is already under way (the first code wins).
  virtual void close(std::uint16_t code) = 0;
  virtual void reconfigure(const std::string& computer, bool sole_caller) = 0;
  // Leaves the computer at its next message boundary, with nothing of the session's under
  // way (docs/architecture.md, "Switching"): `parked` gets the session's record, and the
  // socket is left as it is, neither closed nor shut down. A session that cannot stop so
  // within `drain` closes with 1001 as on a shutdown, and `parked` never runs.
  virtual void park(std::chrono::milliseconds drain,
                    std::function<void(ipc::ParkedSession)> parked) = 0;
  virtual bool live() const = 0;  // installed and not closing
  virtual ipc::ComputerStatus status() const = 0;
  virtual const SessionSettings& settings() const = 0;
};

// Completes the WebSocket upgrade on `socket` (the supervisor read the request; its bytes
// and anything read past them are in `upgrade_bytes`), then runs the session. `installed`
// runs once the 101 is sent, before the MCP handshake starts; if the upgrade fails the
// session ends without ever calling it.
std::shared_ptr<ComputerSession> start_session(
    boost::asio::io_context& io, base::UniqueFd socket, std::string upgrade_bytes,
    SessionSettings settings, SessionHooks hooks,
    std::function<void(std::shared_ptr<ComputerSession>)> installed);

// Takes up a session an earlier worker parked, on its socket: the stream replays its
// handshake to itself and reads on from the record's unread bytes, so the computer sees
// nothing. The record's calls not in `taken_up` are cancelled toward the computer: nobody
// waits for them any more. `installed` runs once the session goes on.
std::shared_ptr<ComputerSession> take_up_session(
    boost::asio::io_context& io, base::UniqueFd socket, ipc::ParkedSession record,
    const std::vector<std::uint64_t>& taken_up, SessionSettings settings, SessionHooks hooks,
    std::function<void(std::shared_ptr<ComputerSession>)> installed);

}  // namespace sb::worker
