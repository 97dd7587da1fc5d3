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

class ResumableStream : public std::enable_shared_from_this<ResumableStream> {
 public:
  struct Limits {
    std::size_t replay_events = 256;     // events kept for a caller that comes back
    std::chrono::seconds resume_window;  // how long a call waits for its caller to come back
    std::chrono::seconds poll_after;     // a call quiet this long is paused; 0: never
  };

  ResumableStream(const boost::asio::any_io_executor& executor, std::string id, std::string owner,
                  Limits limits, ReplyBudget& budget, std::function<void()> forget);

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
  HttpResponse response_copy();
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

  std::string id_;
  std::string owner_;
  Limits limits_;
  ReplyBudget& budget_;
  std::function<void()> forget_;
  boost::asio::steady_timer resume_timer_;
  boost::asio::steady_timer poll_timer_;
  std::optional<Connection> connection_;
  std::uint64_t generations_ = 0;
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
  // Gives the stream to a resuming caller's connection; none when `owner` has no such
  // stream (unknown, over, or another's: alike).
  std::optional<OnHangUp> resume(const std::string& owner, const EventPosition& from,
                                 Respond respond, SendEvent send);
  std::size_t size() const { return streams_.size(); }

 private:
  boost::asio::any_io_executor executor_;
  ReplyBudget& budget_;
  std::string prefix_;  // random per process, so that no id names another process's stream
  std::uint64_t opened_ = 0;
  std::unordered_map<std::string, std::shared_ptr<ResumableStream>> streams_;
};

}  // namespace sb::supervisor
