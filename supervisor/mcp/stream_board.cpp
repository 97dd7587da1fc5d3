#include "supervisor/mcp/stream_board.hpp"

namespace sb::supervisor {

std::optional<std::uint64_t> StreamBoard::open(const StreamKey& key, Sink sink) {
  const std::uint64_t id = next_id_++;
  if (!streams_.try_emplace(key, Open{id, std::move(sink)}).second) return std::nullopt;
  return id;
}

void StreamBoard::close(const StreamKey& key, std::uint64_t id) {
  const auto found = streams_.find(key);
  if (found != streams_.end() && found->second.id == id) streams_.erase(found);
}

std::size_t StreamBoard::broadcast(std::string_view computer, const std::string& message) const {
  std::size_t delivered = 0;
  for (auto at = streams_.lower_bound(StreamKey{std::string(computer), {}, {}});
       at != streams_.end() && at->first.computer == computer; ++at) {
    at->second.sink(message);
    ++delivered;
  }
  return delivered;
}

bool StreamBoard::deliver(const StreamKey& key, std::string message) const {
  const auto found = streams_.find(key);
  if (found == streams_.end()) return false;
  found->second.sink(std::move(message));
  return true;
}

}  // namespace sb::supervisor
