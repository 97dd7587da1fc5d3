// Which callers are subscribed to which resource of which computer session (docs/protocol.md,
// "Subscriptions"). The computer is subscribed once per URI however many callers are, so
// the book says when the first subscriber comes and the last one goes. A subscription
// belongs to the computer session it was made on: one that ended has none. Bounded: a
// caller holds at most `max_per_caller` at once, over all its sessions and computers.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "supervisor/mcp/task_book.hpp"
#include "supervisor/switching/switch_state.hpp"

namespace sb::supervisor {

// The session name of a `subscriptions/listen` stream, followed by its request's id: a line
// break, which no Mcp-Session-Id the switchboard takes up has, keeps it apart from them.
// Its subscriptions end with it and do not cross a switch: the caller listens again.
inline constexpr std::string_view kListenSession = "\nlisten ";

// What a caller names is kept with its subscription, or copied into every notification of
// its listen stream: bounded, so that `max_subscriptions` bounds a caller's bytes too.
inline constexpr std::size_t kMaxSubscriptionUriBytes = 8 * 1024;
inline constexpr std::size_t kMaxListenIdBytes = 256;

// Who a subscription is for: a caller, and the MCP session whose stream takes its
// notifications ("" for a caller that sent no session id).
struct Subscriber {
  std::string caller;
  std::string mcp_session;
  friend auto operator<=>(const Subscriber&, const Subscriber&) = default;
};

class SubscriptionBook {
 public:
  explicit SubscriptionBook(std::size_t max_per_caller) : max_per_caller_(max_per_caller) {}
  void set_max_per_caller(std::size_t max) { max_per_caller_ = max; }

  enum class Added {
    kFirst,    // the URI's first subscriber: the computer is to be subscribed
    kAnother,  // the computer is subscribed already
    kAlready,  // this subscriber was already
    kFull,     // the caller holds its maximum: nothing was added
  };
  Added add(const SessionKey& session, const std::string& uri, const Subscriber& who);
  // Whether that removed the URI's last subscriber: the computer is to be unsubscribed.
  bool remove(const SessionKey& session, const std::string& uri, const Subscriber& who);
  // Every subscription `who` holds on `computer`'s current session, removed; the URIs that
  // lost their last subscriber.
  std::vector<std::string> remove_all(const SessionKey& session, const Subscriber& who);
  std::vector<Subscriber> subscribers(const SessionKey& session, const std::string& uri) const;
  std::size_t held_by(const std::string& caller) const;

  // A subscriber that has had no stream for its notifications (as `has_stream` tells) since
  // a call `window` or more ago loses every subscription; one that has a stream now starts
  // afresh. Called every so often: what each lost, the URIs that lost their last
  // subscriber among it, for the computer to be unsubscribed from them.
  struct Lapsed {
    std::string computer;
    Subscriber who;
    std::vector<std::string> unsubscribed;
  };
  using HasStream = std::function<bool(const std::string& computer, const Subscriber& who)>;
  std::vector<Lapsed> lapse_streamless(const HasStream& has_stream, SteadyTime now,
                                       std::chrono::steady_clock::duration window);

  // For a switch in place (docs/architecture.md, "Switching").
  std::vector<CarriedSubscription> entries() const;
  void restore(const std::vector<CarriedSubscription>& entries);

 private:
  struct OfComputer {
    std::int64_t attached_at_ms = 0;
    std::map<std::string, std::set<Subscriber>> by_uri;
  };
  // The computer's record, emptied when `session` is a newer session than the one it holds.
  OfComputer& current(const SessionKey& session);
  void forget(OfComputer& computer);

  std::size_t max_per_caller_;
  std::map<std::string, OfComputer> computers_;
  std::map<std::string, std::size_t> held_;  // caller -> subscriptions
  // Subscribers (by computer) found without a stream, and since when.
  std::map<std::pair<std::string, Subscriber>, SteadyTime> streamless_since_;
};

}  // namespace sb::supervisor
