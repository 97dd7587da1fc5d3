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

bool StreamBoard::deliver(const StreamKey& key, std::string message) const {
  const auto found = streams_.find(key);
  if (found == streams_.end()) return false;
  found->second.sink(std::move(message));
  return true;
}

}  // namespace sb::supervisor
