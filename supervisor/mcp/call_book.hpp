// The forwarded calls that their callers may still name while they are in flight
// (docs/protocol.md, "Cancellation" and "Requests from the computer"): a caller's
// notifications/cancelled names a call by the caller's own request id, and a caller's
// answer names a request the computer sent it by the id the switchboard gave that request.
// Either matches only a call of the same computer, caller and session, so one caller can
// never cancel or answer for another.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "supervisor/switching/switch_state.hpp"

namespace sb::supervisor {

struct CallOwner {
  std::string computer;
  std::string caller;
  std::string mcp_session;  // "" when the caller sent none
  friend bool operator==(const CallOwner&, const CallOwner&) = default;
};

class CallBook {
 public:
  using Cancel = std::function<void(const std::string& reason)>;

  // Records a call in flight; `request_id` is the caller's id as JSON text. Returns the
  // entry's number, for close() and route_request().
  std::uint64_t open(CallOwner owner, std::string request_id, std::uint64_t call_id, Cancel cancel);
  // The call ended: it can no longer be named.
  void close(std::uint64_t entry);
  // Closes the one call of `owner` with that request id and runs its Cancel. Nothing
  // happens when no call, or more than one, matches.
  bool cancel(const CallOwner& owner, const std::string& request_id, const std::string& reason);

  // Gives the request the computer sent as `key` during `entry`'s call an id that is unique
  // in this process; returns it as JSON text, or nothing when the entry is gone.
  std::optional<std::string> route_request(std::uint64_t entry, std::uint64_t key);
  struct Answer {
    std::uint64_t call_id = 0;
    std::uint64_t key = 0;
  };
  // The routed request that `owner` answers with `routed_id` (JSON text); it is forgotten.
  std::optional<Answer> take_answer(const CallOwner& owner, const std::string& routed_id);

  // The calls in flight of `caller` on `computer`, whatever the session, newest first.
  std::vector<std::uint64_t> calls_of(std::string_view computer, std::string_view caller) const;

  std::size_t size() const { return entries_.size(); }

  // For a switch in place (docs/architecture.md, "Switching"): the routed requests not
  // answered yet and the next routed id; and, in the next process, once the calls they
  // belong to are open again, the same taken back, so that a caller's answer finds its
  // request and no id is given twice.
  std::vector<CarriedRoute> routes() const;
  std::uint64_t next_routed() const { return next_routed_; }
  void restore_routes(const std::vector<CarriedRoute>& routes, std::uint64_t next_routed);

 private:
  struct Entry {
    CallOwner owner;
    std::string request_id;
    std::uint64_t call_id = 0;
    Cancel cancel;
    std::vector<std::string> routed_ids;
  };
  struct Routed {
    std::uint64_t entry = 0;
    std::uint64_t key = 0;
  };

  std::map<std::uint64_t, Entry> entries_;
  std::map<std::string, Routed, std::less<>> routed_;  // by routed id
  std::uint64_t next_entry_ = 1;
  std::uint64_t next_routed_ = 1;
};

}  // namespace sb::supervisor
