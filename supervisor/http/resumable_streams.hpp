// Calls whose event stream a caller may resume (docs/protocol.md, "Resumable streams"): a
// response that becomes an event stream gives every event an id, keeps the last events in
// the reply budget, and outlives the connection it began on for a while. A caller whose
// stream broke, or that the switchboard ended to make it poll, comes back with GET and
// Last-Event-ID and is given what it missed, then the rest of the call as it comes. One
// connection holds a stream at a time; a caller that does not come back within the resume
// window has its call cancelled, as a hang-up always did.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "supervisor/bounds/reply_budget.hpp"
#include "supervisor/http/types.hpp"

namespace sb::supervisor {

// Where a caller resuming a stream left off: the stream, and the last event it has.
struct EventPosition {
  std::string stream;
  std::uint64_t event = 0;
};

// An event id as the switchboard writes them ("<stream>-<event>"); none for anything else.
std::optional<EventPosition> parse_event_id(std::string_view id);

class ResumableStreams;

class ResumableStream : public std::enable_shared_from_this<ResumableStream> {
 public:
  struct Limits {
    std::size_t replay_events = 256;     // events kept for a caller that comes back
    std::chrono::seconds resume_window;  // how long a call waits for its caller to come back
    std::chrono::seconds poll_after;     // a call quiet this long is paused; 0: never
    // How many times a caller may take the stream up again, each restarting the resume
    // window: past them the stream is as one that does not exist, and ends with its window.
    std::uint32_t max_resumes = 16;
  };

  ResumableStream(ResumableStreams& streams, std::string owner, Limits limits);

  const std::string& owner() const { return owner_; }

  // What the handler sends its events and its response to, wherever the caller is now.
  SendEvent events();
  Respond responses();
  // The first connection, until it hangs up or the stream is paused.
  void attach_first(Respond respond, SendEvent send);
  // Once the handler has started the call: `abandon` cancels it when its caller is gone
  // for good. The connection's hang-up, which starts the resume window.
  OnHangUp hold(OnHangUp abandon);
  // A resuming caller's connection takes the stream over after event `after`.
  OnHangUp resume(Respond respond, SendEvent send, std::uint64_t after);
  // A stream that opens at once (a GET's, which has no response to wait for): its caller
  // is given an id before any event.
  void prime();
  // Waiting for its caller: no connection has it.
  bool detached() const { return !over_ && !connection_; }
  // A caller may take it up (again).
  bool resumable() const { return !over_ && resumes_ < limits_.max_resumes; }
  // A connection that takes a detached stream up where it stands, replaying nothing.
  OnHangUp take_up(Respond respond, SendEvent send) {
    return resume(std::move(respond), std::move(send), last_event_);
  }

 private:
  struct Connection {
    Respond respond;
    SendEvent send;
    std::uint64_t generation = 0;
    bool streaming = false;  // the response is an event stream already
  };
  struct Kept {
    std::uint64_t number = 0;
    std::string text;
    ReplyBudget::Lease lease;
  };

  std::string event_id(std::uint64_t number) const;
  OnHangUp hang_up_for(std::uint64_t generation);
  void on_event(std::string head, std::string body);
  void on_response(HttpResponse response);
  void keep_response(const HttpResponse& response);
  static HttpResponse copy_of(const HttpResponse& response);
  void keep(std::uint64_t number, std::string text);
  void send_to_connection(std::string_view head, std::string_view body, std::uint64_t number);
  void prime_connection();
  void hung_up(std::uint64_t generation);
  void poll();
  void pause_connection();
  void await_resume();
  void cancel_call();
  void end();

  ResumableStreams& streams_;
  std::string id_;  // drawn when the caller is first given an id
  std::string owner_;
  Limits limits_;
  // Made when first needed: most answers are plain JSON, and need neither.
  std::optional<boost::asio::steady_timer> resume_timer_;
  std::optional<boost::asio::steady_timer> poll_timer_;
  std::optional<Connection> connection_;
  std::uint64_t generations_ = 0;
  std::uint32_t resumes_ = 0;
  std::deque<Kept> kept_;
  std::uint64_t last_event_ = 0;  // 0 is the priming event
  bool primed_ = false;           // the caller has been given an id to resume from
  // The response, kept for a caller that comes back for it within the resume window.
  std::optional<HttpResponse> response_;
  OnHangUp abandon_;
  bool over_ = false;
};

class ResumableStreams {
 public:
  ResumableStreams(boost::asio::any_io_executor executor, ReplyBudget& budget);

  // A stream for a call whose first connection answers with `respond` and `send`; `owner`
  // is who may resume it, compared whole.
  std::shared_ptr<ResumableStream> open(std::string owner, ResumableStream::Limits limits,
                                        Respond respond, SendEvent send);
  // Gives a stream opened for the messages that belong to no call (a GET's: it opens at
  // once) its caller's first id; it is its owner's notification stream from then on.
  void prime_for_notifications(const std::shared_ptr<ResumableStream>& stream);
  // Gives the stream to a resuming caller's connection; none when `owner` has no such
  // stream (unknown, over, or another's: alike).
  std::optional<OnHangUp> resume(const std::string& owner, const EventPosition& from,
                                 Respond respond, SendEvent send);
  // Gives `owner`'s notification stream, when it waits for its caller, to a connection that
  // named no event.
  std::optional<OnHangUp> take_up_notifications(const std::string& owner, Respond respond,
                                                SendEvent send);
  // Streams whose caller has been given an id, which it may name.
  std::size_t size() const { return streams_.size(); }

  // For its streams.
  const boost::asio::any_io_executor& executor() const { return executor_; }
  ReplyBudget& budget() { return budget_; }
  std::string enlist(std::shared_ptr<ResumableStream> stream);
  void forget(const ResumableStream& stream, const std::string& id);

 private:
  boost::asio::any_io_executor executor_;
  ReplyBudget& budget_;
  std::string prefix_;  // random per process, so that no id names another process's stream
  std::uint64_t enlisted_ = 0;
  std::unordered_map<std::string, std::shared_ptr<ResumableStream>> streams_;
  // Each owner's notification stream, by owner: one of `streams_`.
  std::unordered_map<std::string, std::shared_ptr<ResumableStream>> notifications_;
};

}  // namespace sb::supervisor
