// The watch that gives a caller's in-flight share back the moment it disconnects. While a
// call is pending nothing is read, so a readable socket means the caller hung up,
// half-closed (both read as end of stream) or pipelined its next request. Only a hang-up
// counts: a half-closed caller still reads its reply, and a pipelined request waits for
// this one's answer. End of stream is told apart by a probe: "100 Continue", which a
// client must skip (RFC 9110 §15.2), or in an event stream a keep-alive comment; a caller
// that is gone answers either with a reset.
#pragma once

#include <cstdint>
#include <functional>

#include "supervisor/http/wire.hpp"

namespace sb::supervisor {

class HangUpWatch {
 public:
  explicit HangUpWatch(const Wire& wire) : wire_(wire) {}

  // Watches until stop(); `hung_up` runs at most once, when the caller is gone.
  void start(std::function<void()> hung_up);
  // From now on (until stop) the response is an event stream: end of stream is probed by
  // `write_now`, which writes a keep-alive at once (or lets the write under way serve),
  // rather than by "100 Continue", which may not go in the middle of a body. A stream may
  // wait long for its next event (a caller's GET stream does), so a caller that is gone
  // is found at once, not at the next keep-alive. It may come before start().
  void streaming(std::function<void()> write_now) {
    streaming_ = true;
    write_now_ = std::move(write_now);
  }
  // The response is here. A wait still under way is cancelled unless a stream is being
  // written (a cancel would cut its writes too); then it ends by itself.
  void stop();

 private:
  void wait_readable();
  void probe_half_close();
  void hang_up();

  Wire wire_;
  std::function<void()> hung_up_;
  std::function<void()> write_now_;
  std::uint64_t round_ = 0;  // which start() a handler belongs to
  int waits_ = 0;            // under way, this round's or an earlier one's
  bool streaming_ = false;
};

}  // namespace sb::supervisor
