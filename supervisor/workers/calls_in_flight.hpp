// Every call in flight at the workers, by call id, with the worker it went to: the call
// ids are the registry's, one space for every computer, so finding a call and its worker
// is one lookup whichever computer it went to (registry.hpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "shared/deadline_queue.hpp"
#include "supervisor/workers/calls.hpp"

namespace sb::supervisor {

class Worker;

struct InFlightCall {
  CallCallback done;
  MessageCallback on_message;
  std::chrono::milliseconds timeout{0};
  std::chrono::steady_clock::time_point last_moment;  // start + max_total
  DeadlineQueue::Deadline backstop;
  bool reply_may_arrive = false;
};

class CallsInFlight {
 public:
  // False, and nothing changes, when `call_id` is in flight already.
  bool add(std::uint64_t call_id, const std::shared_ptr<Worker>& worker, InFlightCall call);
  // The call, when it is in flight at `worker`: a worker can reach only its own calls.
  InFlightCall* find(std::uint64_t call_id, const Worker& worker);
  bool contains(std::uint64_t call_id) const { return calls_.contains(call_id); }
  // The worker a call is in flight at, if it is in flight (and its worker still exists).
  std::shared_ptr<Worker> owner_of(std::uint64_t call_id) const;
  // Ends the call's place here and hands it over; nothing when it is not in flight.
  std::optional<InFlightCall> take(std::uint64_t call_id);
  // Every call in flight at `worker`, in call id order, taken.
  std::vector<InFlightCall> take_all_at(const Worker& worker);
  std::size_t size() const { return calls_.size(); }

 private:
  struct Entry {
    std::weak_ptr<Worker> worker;
    const Worker* at = nullptr;  // the same worker, compared without locking
    InFlightCall call;
  };
  std::map<std::uint64_t, Entry> calls_;
};

}  // namespace sb::supervisor
