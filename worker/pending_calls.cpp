#include "worker/pending_calls.hpp"

namespace sb::worker {

std::optional<std::uint64_t> PendingCalls::add(PendingCall call, int caller_cap) {
  const int cap = caller_cap > 0 ? caller_cap : default_caller_cap();
  int& mine = per_caller_[call.caller];
  if (static_cast<int>(size()) >= max_inflight_ || mine >= cap) {
    if (mine == 0) per_caller_.erase(call.caller);
    return std::nullopt;
  }
  ++mine;
  const std::uint64_t id = next_id_++;
  calls_.emplace(id, std::move(call));
  return id;
}

void PendingCalls::put_back(std::uint64_t id, PendingCall call) {
  ++per_caller_[call.caller];
  calls_.emplace(id, std::move(call));
}

std::uint64_t PendingCalls::renew(PendingCall call) {
  const std::uint64_t id = next_id_++;
  put_back(id, std::move(call));
  return id;
}

std::optional<PendingCall> PendingCalls::take(std::uint64_t id) {
  const auto found = calls_.find(id);
  if (found == calls_.end()) return std::nullopt;
  PendingCall call = std::move(found->second);
  calls_.erase(found);
  release_share(call.caller);
  return call;
}

void PendingCalls::release_share(const std::string& caller) {
  const auto count = per_caller_.find(caller);
  if (count != per_caller_.end() && --count->second <= 0) per_caller_.erase(count);
}

void PendingCalls::hold_until_delivered(std::uint64_t call_id, std::string caller) {
  if (call_id == 0 || delivering_.contains(call_id)) return;
  ++per_caller_[caller];
  delivering_.emplace(call_id, std::move(caller));
}

void PendingCalls::delivered(std::uint64_t call_id) {
  const auto found = delivering_.find(call_id);
  if (found == delivering_.end()) return;
  release_share(found->second);
  delivering_.erase(found);
}

PendingCall* PendingCalls::find(std::uint64_t id) {
  const auto found = calls_.find(id);
  return found == calls_.end() ? nullptr : &found->second;
}

std::optional<std::uint64_t> PendingCalls::only_call() const {
  if (calls_.size() != 1 || calls_.begin()->second.handshake) return std::nullopt;
  return calls_.begin()->first;
}

std::optional<std::uint64_t> PendingCalls::newest_call() const {
  if (calls_.empty() || calls_.rbegin()->second.handshake) return std::nullopt;
  return calls_.rbegin()->first;
}

std::optional<std::uint64_t> PendingCalls::find_by_call_id(std::uint64_t call_id) const {
  for (const auto& [id, call] : calls_) {
    if (!call.handshake && call.call_id == call_id) return id;
  }
  return std::nullopt;
}

std::vector<PendingCall> PendingCalls::take_all() {
  std::vector<PendingCall> all;
  all.reserve(calls_.size());
  for (auto& [id, call] : calls_) all.push_back(std::move(call));
  calls_.clear();
  delivering_.clear();
  per_caller_.clear();
  return all;
}

}  // namespace sb::worker
