// Many deadlines on one timer (docs/architecture.md, "Deadlines").
//
// A call in flight needs a deadline, and with a timer of its own every call armed one and
// cancelled it, and each cancellation cost the loop one more handler round. Here a deadline
// is an entry in an ordered map: the one timer is set to the earliest entry when an entry
// earlier than any armed one arrives, and is left alone when an entry goes. With one timeout
// for all calls deadlines arrive in order, so starting and ending a call touches no timer.
// A withdrawn entry at the head costs at most one wake-up that finds nothing due.
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>

namespace sb {

class DeadlineQueue {
  struct State;

 public:
  using Clock = std::chrono::steady_clock;

  // One entry of the queue. Destroying or resetting it withdraws the entry, so a deadline
  // held by what it guards (a call in flight) goes with it.
  class Deadline {
   public:
    Deadline() = default;
    Deadline(Deadline&& other) noexcept;
    Deadline& operator=(Deadline&& other) noexcept;
    ~Deadline() { reset(); }

    // Moves the entry to `at`; a deadline that has fired or was withdrawn stays so.
    void move_to(Clock::time_point at);
    void reset();
    bool pending() const;
    // When it is due (or was, once it has fired).
    Clock::time_point at() const { return at_; }

   private:
    friend class DeadlineQueue;
    Deadline(std::weak_ptr<State> state, Clock::time_point at, std::uint64_t key)
        : state_(std::move(state)), at_(at), key_(key) {}

    std::weak_ptr<State> state_;
    Clock::time_point at_{};
    std::uint64_t key_ = 0;
  };

  explicit DeadlineQueue(boost::asio::io_context& io);
  // Cancels the timer; no entry fires after this, whoever still holds one.
  ~DeadlineQueue();
  DeadlineQueue(const DeadlineQueue&) = delete;
  DeadlineQueue& operator=(const DeadlineQueue&) = delete;

  // `on_expired` runs once, from the loop, at or after `at`, unless the Deadline is
  // withdrawn first. It may add and withdraw entries, and destroy the queue.
  [[nodiscard]] Deadline add(Clock::time_point at, std::function<void()> on_expired);

  std::size_t size() const;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace sb
