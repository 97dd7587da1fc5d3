// One writer at a time on a stream whose writes must not interleave (the link's WebSocket,
// the server's stdin), for coroutines on one thread: a writer takes its turn, writes, and
// gives the turn back, which wakes whoever waits.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include "base/asio_names.hpp"

namespace sb::connect {

class WriteTurn {
 public:
  // The timer never expires: it is only ever cancelled, to wake the waiters.
  explicit WriteTurn(boost::asio::any_io_executor executor)
      : turn_free_(executor, boost::asio::steady_timer::time_point::max()) {}

  boost::asio::awaitable<void> take() {
    while (taken_) co_await turn_free_.async_wait(asio_names::kAwait);
    taken_ = true;
  }

  void give_back() {
    taken_ = false;
    turn_free_.cancel();
  }

 private:
  bool taken_ = false;
  boost::asio::steady_timer turn_free_;
};

}  // namespace sb::connect
