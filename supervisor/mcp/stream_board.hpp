// The event streams callers open with GET (docs/protocol.md, "Subscriptions"): one per
// computer, caller and MCP session, on which the messages that belong to no call reach
// that caller (a subscribed resource's updates). A stream is known by the id it was
// opened under, so that a stream ending late never closes a newer one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

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
