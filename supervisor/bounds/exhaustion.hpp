// Running out of descriptors or memory is a state the supervisor lives through, never a
// reason to exit (docs/robustness.md, "Descriptors"): what hit the limit fails alone, the
// log says so at most once a minute, and accepting pauses instead of spinning.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/system/error_code.hpp>
#include <functional>
#include <string>

#include "shared/log.hpp"

namespace sb::supervisor {

// EMFILE, ENFILE, ENOBUFS, ENOMEM: the process or the system is out of something, and
// trying again at once fails the same way.
bool is_exhaustion(const boost::system::error_code& error);

// Raises the soft descriptor limit to the hard one (the soft default, 1024, is about 1000
// idle callers) and logs the figure.
void raise_descriptor_limit();

// An accept loop's answer to exhaustion: the connection waiting in the backlog would fail
// again at once, so accepting pauses for a moment, as nginx does, while connections that
// are open carry on and free descriptors.
class AcceptPause {
 public:
  AcceptPause(boost::asio::any_io_executor executor, std::string listener)
      : timer_(std::move(executor)), listener_(std::move(listener)) {}

  // True when `error` is exhaustion; `resume` then runs after the pause, unless cancelled.
  bool pause_on(const boost::system::error_code& error, std::function<void()> resume);
  void cancel() { timer_.cancel(); }

 private:
  boost::asio::steady_timer timer_;
  std::string listener_;
  LogThrottle throttle_;
};

}  // namespace sb::supervisor
