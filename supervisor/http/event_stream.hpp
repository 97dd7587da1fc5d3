// A response that became an event stream (docs/protocol.md, "Progress and event
// streams"): the caller's messages during its call as events, then the response as the
// last event and the last chunk. Pieces are written in order, one at a time, each within
// the write deadline and holding its share of the reply budget until written; a comment
// every 15 s with nothing to send keeps proxies from closing the stream. A response still
// arriving from its worker (docs/architecture.md, "Large replies") is framed as it comes,
// 256 KiB at a time and each part only once the caller has taken the one before.
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "ipc/arriving_body.hpp"
#include "supervisor/bounds/reply_budget.hpp"
#include "supervisor/http/response_head.hpp"
#include "supervisor/http/sse.hpp"
#include "supervisor/http/types.hpp"
#include "supervisor/http/wire.hpp"

namespace sb::supervisor {

class EventStream {
 public:
  // Messages beyond either cap wait for nobody: they are dropped (the response never is).
  // One computer message may be 16 MiB, so the count alone would bound nothing.
  struct Caps {
    std::size_t max_events = 256;
    std::size_t max_bytes = 16 * 1024 * 1024;
    std::chrono::milliseconds keep_alive{15'000};
  };

  // `ended(ok)` runs once: after the last chunk was written (true), or when a write failed
  // or a response arriving from its worker failed (false).
  EventStream(const Wire& wire, ReplyBudget& budget, std::function<void(bool ok)> ended, Caps caps);
  EventStream(const EventStream&) = delete;
  EventStream& operator=(const EventStream&) = delete;

  // Writes the stream's head and starts the keep-alive comments.
  void open(const Framing& framing);
  // Goes on with a stream whose head an earlier process wrote before a switch in place
  // (docs/architecture.md, "Switching"): the keep-alive comments start, nothing else.
  void resume();
  // Nothing is being written and nothing waits to be: a switch may carry the stream now.
  bool idle() const { return !writing_ && pieces_.empty() && !arrival_ && !over_; }
  // Runs each time the stream becomes idle (see idle()).
  void when_idle(std::function<void()> idle) { when_idle_ = std::move(idle); }
  // A message before the response, with the id `id` unless empty; dropped when the caller
  // is this far behind or the budget is full.
  void event(std::string_view head, std::string_view body, std::string_view id = {});
  // The first event of a resumable stream (priming_event()).
  void prime(std::string_view id);
  // The response as the last event, then the last chunk; or, for a response that pauses
  // the stream, the last chunk alone.
  void finish(HttpResponse response);
  // A keep-alive comment now, unless something is being written anyway: whether the
  // caller is still there shows in how the write ends.
  void keep_alive_now();
  // The connection is closing: no more keep-alive comments.
  void stop();

 private:
  // A piece of the stream, holding its share of the reply budget until written.
  struct Piece {
    std::string bytes;
    ReplyBudget::Lease lease;
  };
  // The last event, still arriving.
  struct Arrival {
    std::shared_ptr<ipc::ArrivingBody> body;
    std::string opening;  // the event's opening and the caller's id, for the first part
    ReplyBudget::Lease lease;
    std::size_t sent = 1;  // its opening brace is never sent (ReplyText)
    EventData data;
  };

  void schedule_keep_alive();
  void queue(std::string bytes, ReplyBudget::Lease lease = {});
  void write_next();
  void queue_arriving_part();
  void end(bool ok);

  Wire wire_;
  ReplyBudget& budget_;
  std::function<void(bool ok)> ended_;
  Caps caps_;
  boost::asio::steady_timer keep_alive_timer_;
  std::deque<Piece> pieces_;
  std::size_t queued_bytes_ = 0;
  bool writing_ = false;
  bool finishing_ = false;  // the response is queued or arriving: nothing else is
  bool over_ = false;       // ended() has run
  std::optional<Arrival> arrival_;
  std::function<void()> when_idle_;
};

}  // namespace sb::supervisor
