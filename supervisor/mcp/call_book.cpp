#include "supervisor/mcp/call_book.hpp"

#include <algorithm>
#include <utility>

namespace sb::supervisor {

std::uint64_t CallBook::open(CallOwner owner, std::string request_id, std::uint64_t call_id,
                             Cancel cancel) {
  const std::uint64_t entry = next_entry_++;
  entries_.emplace(entry,
                   Entry{std::move(owner), std::move(request_id), call_id, std::move(cancel), {}});
  return entry;
}

void CallBook::close(std::uint64_t entry) {
  const auto found = entries_.find(entry);
  if (found == entries_.end()) return;
  for (const auto& routed_id : found->second.routed_ids) routed_.erase(routed_id);
  entries_.erase(found);
}

bool CallBook::cancel(const CallOwner& owner, const std::string& request_id,
                      const std::string& reason) {
  auto match = entries_.end();
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->second.owner != owner || it->second.request_id != request_id) continue;
    if (match != entries_.end()) return false;  // ambiguous: the caller reused an id
    match = it;
  }
  if (match == entries_.end()) return false;
  // The entry goes before the Cancel runs, so that whatever the Cancel does finds it gone.
  Cancel cancel = std::move(match->second.cancel);
  close(match->first);
  if (cancel) cancel(reason);
  return true;
}

std::optional<std::string> CallBook::route_request(std::uint64_t entry, std::uint64_t key) {
  const auto found = entries_.find(entry);
  if (found == entries_.end()) return std::nullopt;
  // A string id never collides with the numbers callers tend to use for their own requests.
  std::string routed_id = "\"sb-" + std::to_string(next_routed_++) + "\"";
  found->second.routed_ids.push_back(routed_id);
  routed_.emplace(routed_id, Routed{entry, key});
  return routed_id;
}

std::optional<CallBook::Answer> CallBook::take_answer(const CallOwner& owner,
                                                      const std::string& routed_id) {
  const auto found = routed_.find(routed_id);
  if (found == routed_.end()) return std::nullopt;
  const auto entry = entries_.find(found->second.entry);
  if (entry == entries_.end() || entry->second.owner != owner) return std::nullopt;
  const Answer answer{entry->second.call_id, found->second.key};
  std::erase(entry->second.routed_ids, routed_id);
  routed_.erase(found);
  return answer;
}

std::vector<CarriedRoute> CallBook::routes() const {
  std::vector<CarriedRoute> out;
  for (const auto& [routed_id, routed] : routed_) {
    const auto entry = entries_.find(routed.entry);
    if (entry == entries_.end()) continue;
    out.push_back({.routed_id = routed_id, .call_id = entry->second.call_id, .key = routed.key});
  }
  return out;
}

void CallBook::restore_routes(const std::vector<CarriedRoute>& routes, std::uint64_t next_routed) {
  next_routed_ = std::max(next_routed_, next_routed);
  for (const auto& route : routes) {
    const auto entry = std::find_if(entries_.begin(), entries_.end(), [&](const auto& candidate) {
      return candidate.second.call_id == route.call_id;
    });
    if (entry == entries_.end() || routed_.contains(route.routed_id)) continue;
    entry->second.routed_ids.push_back(route.routed_id);
    routed_.emplace(route.routed_id, Routed{entry->first, route.key});
  }
}

std::vector<std::uint64_t> CallBook::calls_of(std::string_view computer,
                                              std::string_view caller) const {
  std::vector<std::uint64_t> calls;
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
    if (it->second.owner.computer == computer && it->second.owner.caller == caller)
      calls.push_back(it->second.call_id);
  }
  return calls;
}

}  // namespace sb::supervisor
