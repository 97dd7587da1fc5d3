#include "supervisor/mcp/subscription_book.hpp"

namespace sb::supervisor {

SubscriptionBook::OfComputer& SubscriptionBook::current(const SessionKey& session) {
  OfComputer& computer = computers_[session.computer];
  if (computer.attached_at_ms != session.attached_at_ms) {
    forget(computer);
    computer.attached_at_ms = session.attached_at_ms;
  }
  return computer;
}

void SubscriptionBook::forget(OfComputer& computer) {
  for (const auto& [uri, subscribers] : computer.by_uri) {
    for (const auto& who : subscribers) {
      if (--held_[who.caller] == 0) held_.erase(who.caller);
    }
  }
  computer.by_uri.clear();
}

SubscriptionBook::Added SubscriptionBook::add(const SessionKey& session, const std::string& uri,
                                              const Subscriber& who) {
  OfComputer& computer = current(session);
  auto& subscribers = computer.by_uri[uri];
  if (subscribers.contains(who)) return Added::kAlready;
  if (held_by(who.caller) >= max_per_caller_) {
    if (subscribers.empty()) computer.by_uri.erase(uri);
    return Added::kFull;
  }
  subscribers.insert(who);
  ++held_[who.caller];
  return subscribers.size() == 1 ? Added::kFirst : Added::kAnother;
}

bool SubscriptionBook::remove(const SessionKey& session, const std::string& uri,
                              const Subscriber& who) {
  OfComputer& computer = current(session);
  const auto found = computer.by_uri.find(uri);
  if (found == computer.by_uri.end() || found->second.erase(who) == 0) return false;
  if (--held_[who.caller] == 0) held_.erase(who.caller);
  if (!found->second.empty()) return false;
  computer.by_uri.erase(found);
  return true;
}

std::vector<std::string> SubscriptionBook::remove_all(const SessionKey& session,
                                                      const Subscriber& who) {
  std::vector<std::string> held;
  for (const auto& [uri, subscribers] : current(session).by_uri) {
    if (subscribers.contains(who)) held.push_back(uri);
  }
  std::vector<std::string> unsubscribed;
  for (const auto& uri : held) {
    if (remove(session, uri, who)) unsubscribed.push_back(uri);
  }
  return unsubscribed;
}

std::vector<Subscriber> SubscriptionBook::subscribers(const SessionKey& session,
                                                      const std::string& uri) const {
  const auto computer = computers_.find(session.computer);
  if (computer == computers_.end() || computer->second.attached_at_ms != session.attached_at_ms)
    return {};
  const auto found = computer->second.by_uri.find(uri);
  if (found == computer->second.by_uri.end()) return {};
  return {found->second.begin(), found->second.end()};
}

std::size_t SubscriptionBook::held_by(const std::string& caller) const {
  const auto found = held_.find(caller);
  return found == held_.end() ? 0 : found->second;
}

std::vector<SubscriptionBook::Lapsed> SubscriptionBook::lapse_streamless(
    const HasStream& has_stream, SteadyTime now, std::chrono::steady_clock::duration window) {
  std::set<std::pair<std::string, Subscriber>> subscribed;
  for (const auto& [name, computer] : computers_) {
    for (const auto& [uri, subscribers] : computer.by_uri) {
      for (const auto& who : subscribers) subscribed.emplace(name, who);
    }
  }
  std::map<std::pair<std::string, Subscriber>, SteadyTime> still;
  std::vector<Lapsed> lapsed;
  for (const auto& key : subscribed) {
    if (has_stream(key.first, key.second)) continue;
    const auto known = streamless_since_.find(key);
    const SteadyTime since = known == streamless_since_.end() ? now : known->second;
    if (now - since < window) {
      still.emplace(key, since);
      continue;
    }
    const SessionKey session{key.first, computers_.at(key.first).attached_at_ms};
    lapsed.push_back({key.first, key.second, remove_all(session, key.second)});
  }
  streamless_since_ = std::move(still);
  return lapsed;
}

std::vector<CarriedSubscription> SubscriptionBook::entries() const {
  std::vector<CarriedSubscription> out;
  for (const auto& [name, computer] : computers_) {
    for (const auto& [uri, subscribers] : computer.by_uri) {
      for (const auto& who : subscribers) {
        if (who.mcp_session.starts_with(kListenSession)) continue;
        out.push_back({.computer = name,
                       .attached_at_ms = computer.attached_at_ms,
                       .uri = uri,
                       .caller = who.caller,
                       .mcp_session = who.mcp_session});
      }
    }
  }
  return out;
}

void SubscriptionBook::restore(const std::vector<CarriedSubscription>& entries) {
  // Taken back whatever this process's limit: they were within the last one's.
  for (const auto& entry : entries) {
    OfComputer& computer = current({entry.computer, entry.attached_at_ms});
    if (computer.by_uri[entry.uri].insert({entry.caller, entry.mcp_session}).second)
      ++held_[entry.caller];
  }
}

}  // namespace sb::supervisor
