// The event streams on which the messages that belong to no call reach a caller
// (docs/protocol.md, "Subscriptions"): a subscribed resource's updates, a computer's list
// changes. Those callers of the older revisions open with GET, one per computer, caller
// and MCP session, and each `subscriptions/listen` of 2026-07-28 (under its own session
// name, kListenSession). A stream is known by the id it was opened under, so that a stream
// ending late never closes a newer one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
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

  // The stream's id; none when that key has a stream open already.
  std::optional<std::uint64_t> open(const StreamKey& key, Sink sink);
  void close(const StreamKey& key, std::uint64_t id);
  // Whether the key has a stream open, which took the message.
  bool deliver(const StreamKey& key, std::string message) const;
  // To every stream open on `computer`, each sink taking what it wants of it; how many.
  std::size_t broadcast(std::string_view computer, const std::string& message) const;
  std::size_t size() const { return streams_.size(); }

 private:
  struct Open {
    std::uint64_t id = 0;
    Sink sink;
  };
  std::map<StreamKey, Open> streams_;
  std::uint64_t next_id_ = 1;
};

}  // namespace sb::supervisor
