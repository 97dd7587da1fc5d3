#include "supervisor/mcp/input_book.hpp"

#include <charconv>

namespace sb::supervisor {
namespace {

// "sb1.<round>.<secret>": the prefix tells the switchboard's own state from a computer's,
// which passes through as its caller sent it.
constexpr std::string_view kPrefix = "sb1.";

}  // namespace

std::optional<std::string> InputBook::open(const CallOwner& owner,
                                           std::weak_ptr<BridgedCall> call) {
  // A round is closed when its call ends; one whose call went without a word is swept
  // when the book fills.
  if (rounds_.size() >= kMaxRounds)
    std::erase_if(rounds_, [](const auto& entry) { return entry.second.call.expired(); });
  if (rounds_.size() >= kMaxRounds) return std::nullopt;
  const std::uint64_t round = next_round_++;
  const std::string secret = generate_secret();
  rounds_.emplace(round, Round{owner, verifier_of(secret), std::move(call)});
  std::string state(kPrefix);
  state += std::to_string(round);
  state += '.';
  state += secret;
  return state;
}

std::optional<std::uint64_t> InputBook::round_of(std::string_view state) {
  if (!state.starts_with(kPrefix)) return std::nullopt;
  state.remove_prefix(kPrefix.size());
  std::uint64_t round = 0;
  const auto [end, error] = std::from_chars(state.data(), state.data() + state.size(), round);
  if (error != std::errc() || end == state.data() || end == state.data() + state.size() ||
      *end != '.')
    return std::nullopt;
  return round;
}

std::shared_ptr<BridgedCall> InputBook::take(std::string_view state, const CallOwner& owner) {
  const auto round = round_of(state);
  if (!round) return nullptr;
  const auto found = rounds_.find(*round);
  if (found == rounds_.end()) return nullptr;
  const std::string_view secret = state.substr(state.find('.', kPrefix.size()) + 1);
  // The digest is compared whatever the owner, so that timing tells nothing either way.
  const bool same_secret = same_digest(verifier_of(secret), found->second.secret);
  if (!same_secret || !(found->second.owner == owner)) return nullptr;
  auto call = found->second.call.lock();
  rounds_.erase(found);
  return call;
}

void InputBook::close(std::uint64_t round) {
  rounds_.erase(round);
}

}  // namespace sb::supervisor
