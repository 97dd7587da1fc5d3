// The event streams on which the messages that belong to no call reach a caller
// (docs/protocol.md, "Subscriptions"): a subscribed resource's updates, a computer's list
// changes. Those callers of the older revisions open with GET, one per computer, caller
// and MCP session, and each `subscriptions/listen` of 2026-07-28 (under its own session
// name, kListenSession). A stream is known by the id it was opened under, so that a stream
// ending late never closes a newer one. A caller holds at most `max_per_caller` at once,
// whatever session ids it makes up ([limits] max_streams_per_caller). A message for every
// stream of a computer goes out a few streams per turn of the event loop, so that a
// computer with many listeners never holds up the calls of the others.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace sb::supervisor {

struct StreamKey {
  std::string computer;
  std::string caller;
  std::string mcp_session;
  friend auto operator<=>(const StreamKey&, const StreamKey&) = default;
};

class StreamBoard {
 public:
  // Takes one message's JSON text, written as one event.
  using Sink = std::function<void(std::string message)>;

  // Sink calls of broadcasts per turn of the loop, and broadcasts waiting to go out. Each
  // sink call is a write to a socket; a few per turn keep other computers' calls within
  // twice their time during a large fan-out (docs/benchmarks.md, "Fan-out").
  static constexpr std::size_t kDeliveriesPerTurn = 4;
  static constexpr std::size_t kMaxWaitingBroadcasts = 1024;

  StreamBoard(boost::asio::any_io_executor executor, std::size_t max_per_caller)
      : executor_(std::move(executor)), max_per_caller_(max_per_caller) {}
  void set_max_per_caller(std::size_t max) { max_per_caller_ = max; }

  // The stream's id; none when that key has a stream open already, or its caller holds
  // its maximum (full()).
  std::optional<std::uint64_t> open(const StreamKey& key, Sink sink);
  bool full(const std::string& caller) const;
  std::size_t held_by(const std::string& caller) const;
  void close(const StreamKey& key, std::uint64_t id);
  bool is_open(const StreamKey& key) const { return streams_.contains(key); }
  // Whether the key has a stream open, which took the message.
  bool deliver(const StreamKey& key, std::string message) const;
  // To every stream open on `computer`, each sink taking what it wants of it, in later turns
  // of the loop and in order: how many streams are open now. None when so many broadcasts
  // wait already: the message is dropped.
  std::size_t broadcast(std::string_view computer, std::string message);
  std::size_t size() const { return streams_.size(); }

 private:
  struct Open {
    std::uint64_t id = 0;
    Sink sink;
  };
  // A broadcast under way: the streams after `after` (all, when none) have it still to get.
  struct Broadcast {
    std::string computer;
    std::string message;
    std::optional<StreamKey> after;
  };
  void schedule();
  void deliver_some();

  boost::asio::any_io_executor executor_;
  std::deque<Broadcast> waiting_;
  bool scheduled_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // for what is posted
  std::map<StreamKey, Open> streams_;
  std::map<std::string, std::size_t> held_;  // caller -> streams open
  std::size_t max_per_caller_;
  std::uint64_t next_id_ = 1;
};

}  // namespace sb::supervisor
