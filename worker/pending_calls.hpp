// The pending table of one computer socket: which internal ids are awaiting a reply, for
// whom, and the two in-flight caps (docs/protocol.md, "In-flight caps").
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "shared/deadline_queue.hpp"

namespace sb::worker {

// A task conversation the worker holds with the computer in place of one request, where the
// caller's era and the computer's name tasks differently (docs/protocol.md, "Tasks across
// eras"; session_tasks.cpp).
enum class TaskStep : std::uint8_t {
  kNone,
  // A handshake-era caller's tasks/result on a 2026-only computer: tasks/get until the task
  // ends (its inputRequests asked of the caller and sent back with tasks/update).
  kPoll,
  kUpdate,
  // A handshake-era caller's tasks/cancel on a 2026-only computer, whose answer is empty:
  // then tasks/get, whose task is the answer.
  kCancel,
  kView,
  // A 2026-07-28 caller's tasks/get on a handshake-era computer: once the task has ended,
  // tasks/result, whose result or error goes into the task as that revision has it.
  kGet,
  kInline,
};

struct PendingCall {
  std::uint64_t call_id = 0;  // the supervisor's id; 0 for the handshake
  std::string caller;
  bool handshake = false;
  bool stream = false;         // the caller takes messages during the call
  std::string progress_token;  // the caller's own token as JSON text; empty: none
  std::chrono::milliseconds timeout{0};
  std::chrono::steady_clock::time_point last_moment{};  // started + max_total: never later
  DeadlineQueue::Deadline deadline;
  std::uint64_t sent_unix_nanos = 0;  // when written for the computer (ipc::CallOutcome)
  // A computer that speaks only 2026-07-28 may answer this call input-required, to be asked
  // of its caller (session_asking.cpp): the method and params as sent, for the retry, and
  // the rounds asked so far. Empty method: it may not.
  std::string ask_method;
  std::string ask_params;
  int ask_rounds = 0;
  TaskStep task_step = TaskStep::kNone;
  std::string task_id;           // the task the conversation is about
  std::string task_view;         // kInline: the task, as JSON text, waiting for its result
  DeadlineQueue::Deadline poll;  // kPoll: the next tasks/get
};

class PendingCalls {
 public:
  explicit PendingCalls(int max_inflight) : max_inflight_(max_inflight) {}

  // The per-caller share when none is configured: half the socket's cap, rounded up.
  int default_caller_cap() const { return (max_inflight_ + 1) / 2; }
  int max_inflight() const { return max_inflight_; }
  // Calls in flight at the computer and replies not yet delivered: what the caps count.
  std::size_t size() const { return calls_.size() + delivering_.size(); }

  // Registers a call and returns its fresh id, or nothing when a cap is full.
  // `caller_cap` 0 means the default share.
  std::optional<std::uint64_t> add(PendingCall call, int caller_cap);
  std::optional<PendingCall> take(std::uint64_t id);
  PendingCall* find(std::uint64_t id);
  // The one call in flight that is not the handshake, when there is exactly one.
  std::optional<std::uint64_t> only_call() const;
  // The most recently sent call in flight, if any.
  std::optional<std::uint64_t> newest_call() const;
  // The id of the pending call the supervisor knows as `call_id`, if any.
  std::optional<std::uint64_t> find_by_call_id(std::uint64_t call_id) const;
  std::vector<PendingCall> take_all();
  // The calls in flight at the computer (not the replies being delivered), by id.
  const std::map<std::uint64_t, PendingCall>& calls() const { return calls_; }
  std::uint64_t next_id() const { return next_id_; }

  // A session taken up where another worker left it (docs/architecture.md, "Switching"):
  // ids go on from `next_id`, and each call is put back under its own id, within the
  // caps it was admitted under.
  void continue_ids_from(std::uint64_t next_id) { next_id_ = next_id; }
  void put_back(std::uint64_t id, PendingCall call);
  // The call again under a fresh id, in the place it held: a retry of it is on its way.
  std::uint64_t renew(PendingCall call);
  // A fresh id for a request of the session's own that nobody waits for.
  std::uint64_t reserve_id() { return next_id_++; }

  // A call taken for its reply keeps its place in both caps until delivered(call_id): the
  // reply may still be on its way to a slow caller (docs/robustness.md, "Memory").
  void hold_until_delivered(std::uint64_t call_id, std::string caller);
  void delivered(std::uint64_t call_id);

 private:
  void release_share(const std::string& caller);

  int max_inflight_;
  std::uint64_t next_id_ = 1;  // ids are never reused on one socket
  std::map<std::uint64_t, PendingCall> calls_;
  std::map<std::string, int, std::less<>> per_caller_;
  std::map<std::uint64_t, std::string> delivering_;  // the supervisor's call id -> caller
};

}  // namespace sb::worker
