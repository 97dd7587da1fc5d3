#include "connect/connector.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include "base/asio_names.hpp"
#include "connect/http_upstream.hpp"
#include "connect/stdio_server.hpp"
#include "shared/backoff.hpp"
#include "shared/log.hpp"
#include "shared/secret_file.hpp"

namespace sb::connect {
namespace {

using namespace sb::asio_names;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr std::uint16_t kCloseReplaced = 4002;
constexpr std::uint16_t kCloseRevoked = 4003;
constexpr std::uint16_t kCloseServerGone = 1011;
constexpr milliseconds kStableAttempt{60'000};  // an attach this long resets the backoff

std::string seconds_text(milliseconds duration) {
  const long long tenths = (duration.count() + 50) / 100;
  return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) + " s";
}

std::string close_text(const LinkEnd& end) {
  std::string text = "code " + std::to_string(end.code);
  if (!end.reason.empty()) text.append(" (").append(end.reason).append(")");
  return text;
}

}  // namespace

Connector::Connector(net::io_context& io, Options options, std::shared_ptr<ssl::context> tls,
                     Timings timings, LinksChanged on_links_changed)
    : io_(io),
      options_(std::move(options)),
      tls_(std::move(tls)),
      timings_(timings),
      on_links_changed_(std::move(on_links_changed)),
      server_done_(io),
      server_turn_(io.get_executor()),
      server_start_turn_(io.get_executor()),
      links_done_(io, net::steady_timer::time_point::max()),
      room_(io, net::steady_timer::time_point::max()) {
  for (const SwitchboardUrl& url : options_.urls)
    links_.push_back(std::make_unique<LinkSlot>(io.get_executor(), url));
}

// Every link on its own until each has stopped; the exit status is that of the last link
// to stop for good (0 when stopped by a signal). A link that fails stops them all, and
// run() throws what it threw.
net::awaitable<int> Connector::run() {
  links_running_ = links_.size();
  for (LinkId id = 0; id < links_.size(); ++id) {
    net::co_spawn(io_, run_link(id), [this](std::exception_ptr failure) {
      if (failure) fail(failure);
      if (--links_running_ == 0) links_done_.cancel();
    });
  }
  if (links_running_ > 0) co_await links_done_.async_wait(kAwait);
  co_await end_server();
  if (failure_) std::rethrow_exception(failure_);
  co_return stopping_ ? kExitStopped : exit_code_;
}

net::awaitable<void> Connector::run_link(LinkId id) {
  LinkSlot& slot = *links_[id];
  const std::string& url = slot.url.url;
  Backoff backoff(timings_.dial_backoff, timings_.dial_backoff * 60, kStableAttempt);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  while (!stopping_) {
    const auto started = Clock::now();
    std::string why_redial;
    std::string secret;
    std::string problem = co_await running_server();
    if (stopping_) break;  // stop() came while the server started: this link never dials
    if (!problem.empty()) {
      why_redial = "the MCP server did not start: " + problem;
    } else if (problem = read_secret(secret); !problem.empty()) {
      why_redial = std::move(problem);
    } else {
      std::optional<ProxyHop> hop;
      if (slot.url.proxy) {
        log_info("dialling the switchboard",
                 {{"computer", options_.name}, {"url", url}, {"proxy", slot.url.proxy->url}});
        hop = sb::proxy_hop(*slot.url.proxy, problem);
      } else {
        log_info("dialling the switchboard", {{"computer", options_.name}, {"url", url}});
      }
      slot.link = make_link(io_.get_executor(), slot.url.target, tls_,
                            LinkTimings{timings_.dial_ping, timings_.dial_silence},
                            std::string("switchboard-connect/") + SWITCHBOARD_VERSION, hop);
      // Not a conditional expression around co_await: GCC 12 destroys its temporaries
      // twice.
      DialResult dial{DialOutcome::kFailed, problem};
      if (problem.empty()) dial = co_await slot.link->dial(secret);
      if (stopping_) break;
      if (dial.outcome == DialOutcome::kUnauthorized) {
        // Only an operator can fix a refused secret: ask again rarely, backoff untouched.
        slot.link.reset();
        log_warn(options_.gateway_adds_secret
                     ? "the switchboard refused the attach (401): the gateway added no secret "
                       "it accepts; asking again later"
                     : "the switchboard refused the secret (401); asking again later",
                 {{"computer", options_.name},
                  {"url", url},
                  {"retry_in", seconds_text(timings_.dial_unauthorized)}});
        co_await sleep(slot, timings_.dial_unauthorized);
        continue;
      }
      if (dial.outcome == DialOutcome::kFailed) {
        why_redial = "dial failed: " + dial.detail;
      } else {
        const LinkEnd end = co_await relay(id, slot.link);
        slot.link.reset();
        if (stopping_) break;
        if (end.code == kCloseReplaced || end.code == kCloseRevoked) {
          log_error(end.code == kCloseReplaced
                        ? "a newer attach with this secret replaced this one; stopping this "
                          "link"
                        : "the switchboard no longer accepts this secret; stopping this link "
                          "until an operator updates it",
                    {{"computer", options_.name}, {"url", url}, {"close", close_text(end)}});
          exit_code_ = end.code == kCloseReplaced ? kExitReplaced : kExitRevoked;
          break;
        }
        why_redial = "detached, " + close_text(end);
      }
    }
    const auto lasted = std::chrono::duration_cast<milliseconds>(Clock::now() - started);
    const milliseconds delay = jittered(backoff.next(lasted), unit(random_));
    log_info(why_redial,
             {{"computer", options_.name}, {"url", url}, {"retry_in", seconds_text(delay)}});
    co_await sleep(slot, delay);
  }
}

// A loop that threw stops everything; run() throws it once every link has stopped.
void Connector::fail(std::exception_ptr failure) {
  if (!failure_) failure_ = failure;
  stop();
}

void Connector::stop() {
  stopping_ = true;
  for (const auto& slot : links_) {
    slot->sleep_timer.cancel();
    if (slot->link) slot->link->close(1000, "switchboard-connect stopping");
  }
}

// The server of the next attach: the running one, else a new one with a new session.
// What failed, or "".
net::awaitable<std::string> Connector::running_server() {
  co_await server_start_turn_.take();
  std::string problem;
  try {
    problem = co_await start_server_unless_running();
  } catch (...) {
    server_start_turn_.give_back();  // the other links are not left waiting
    throw;
  }
  server_start_turn_.give_back();
  co_return problem;
}

net::awaitable<std::string> Connector::start_server_unless_running() {
  if (server_ && !server_->ended() && server_reading_) co_return "";
  co_await end_server();
  if (options_.upstream) {
    server_ = std::make_unique<HttpUpstream>(io_, *options_.upstream, options_.name);
  } else {
    server_ = std::make_unique<StdioServer>(io_, options_.command, options_.name);
  }
  if (std::string problem = server_->start(); !problem.empty()) {
    server_.reset();
    co_return problem;
  }
  // A new server, a new MCP session: a link still attached to the old one (it attached
  // as the old server exited) is closed, not carried over to a session it never made.
  for (const LinkId id : session_.attached_links()) {
    if (const auto& link = links_[id]->link) link->close(kCloseServerGone, "the MCP server exited");
  }
  session_ = KeptSession();
  ++server_generation_;
  server_done_.expires_at(net::steady_timer::time_point::max());
  server_reading_ = true;  // before it runs: co_spawn starts it later
  net::co_spawn(io_, relay_server(), [this](std::exception_ptr failure) {
    if (failure) server_failed(failure);
  });
  co_return "";
}

// Stops the server, if any, and returns once nothing reads from it any more.
net::awaitable<void> Connector::end_server() {
  if (!server_) co_return;
  co_await server_->stop(timings_.server_grace);
  if (server_reading_) co_await server_done_.async_wait(kAwait);
  server_.reset();
}

// Read before every dial, so that a replaced file takes effect at the next attempt. With a
// gateway adding the secret there is none to read: the dial sends no Authorization.
std::string Connector::read_secret(std::string& secret) const {
  if (options_.gateway_adds_secret) return "";
  std::string error;
  std::optional<std::string> read = sb::read_secret(options_.secret_file, error);
  if (!read) return error;
  if (read->empty()) return "secret_file " + options_.secret_file.string() + " is empty";
  secret = std::move(*read);
  return "";
}

// Relays until the attach ends: the switchboard's messages to the server, or answered
// here; the server's go to it from relay_server(). Then the server hears what it must of
// the lost attach, and goes on. A link that attaches while the server is gone is closed:
// the next attach gets the next server.
net::awaitable<LinkEnd> Connector::relay(LinkId id, std::shared_ptr<Link> link) {
  const std::uint64_t generation = server_generation_;
  const bool attached = server_reading_;
  if (attached) {
    session_.attach(id);
    links_changed(id, "attached");
  } else {
    link->close(kCloseServerGone, "the MCP server exited");
  }
  while (const auto message = co_await link->read()) {
    Routed routed = session_.from_link(id, *message);
    log_dropped(routed, "the switchboard");
    co_await write_links(std::move(routed.to_links));
    if (routed.to_server && !co_await write_server(*routed.to_server, generation))
      link->close(kCloseServerGone, "the MCP server stopped reading");
  }
  LinkSlot& slot = *links_[id];
  slot.outbox.clear();
  slot.outbox_bytes = 0;
  room_.cancel();
  if (attached) {
    // A new server may have come meanwhile: it never knew this link.
    if (generation == server_generation_ && session_.attached(id)) {
      for (const std::string& message : session_.detach(id)) {
        if (!co_await write_server(message, generation)) break;
      }
    }
    links_changed(id, "detached");
  }
  co_return link->end();
}

// For the server's life: each of its messages to the links it belongs to, or answered
// here while there is none. Its output ending (it exited, or we stopped it) ends every
// attach, since their MCP session has ended with it.
net::awaitable<void> Connector::relay_server() {
  const std::uint64_t generation = server_generation_;
  while (const auto message = co_await server_->read()) {
    Routed routed = session_.from_server(*message);
    log_dropped(routed, "the MCP server");
    co_await write_links(std::move(routed.to_links));
    if (routed.to_server) co_await write_server(*routed.to_server, generation);
  }
  for (const LinkId id : session_.attached_links()) {
    if (const auto& link = links_[id]->link) link->close(kCloseServerGone, "the MCP server exited");
  }
  server_reading_ = false;
  server_done_.cancel();
}

// Reading the server threw: nothing reads it any more, and everything stops.
void Connector::server_failed(std::exception_ptr failure) {
  server_reading_ = false;
  server_done_.cancel();
  fail(failure);
}

// False when the server did not take it, or is not the one it was composed for.
net::awaitable<bool> Connector::write_server(const std::string& message, std::uint64_t generation) {
  co_await server_turn_.take();
  const bool written =
      server_ && generation == server_generation_ && co_await server_->write(message);
  server_turn_.give_back();
  co_return written;
}

// Each message into its link's outbox, as the link is attached now: one that detaches
// meanwhile (and perhaps attaches again, to a new MCP session) must not get a lost
// attach's messages. A full outbox holds the server back while every link is behind (the
// server is the fast one); once another link keeps up, the one that does not is dropped,
// so that a switchboard that stopped reading never holds back the others.
net::awaitable<void> Connector::write_links(std::vector<std::pair<LinkId, std::string>> messages) {
  for (auto& [id, message] : messages) {
    LinkSlot& slot = *links_[id];
    const std::shared_ptr<Link> link = slot.link;
    if (!link || !session_.attached(id)) continue;
    while (slot.link == link && slot.outbox_bytes > kMaxOutboxBytes) {
      if (another_link_keeps_up(id)) {
        link->drop(kCloseServerGone, "the switchboard does not read fast enough");
        break;
      }
      co_await room_.async_wait(kAwait);  // never expires: cancelled to wake every waiter
    }
    if (slot.link != link || !session_.attached(id) || slot.outbox_bytes > kMaxOutboxBytes)
      continue;
    slot.outbox_bytes += message.size();
    slot.outbox.push_back(std::move(message));
    if (slot.draining != link) {
      slot.draining = link;
      net::co_spawn(io_, drain(id, link), net::detached);
    }
  }
}

// The one writer of a link's outbox while that link is the slot's. A write that fails is
// the link failing: its reader ends the attach.
net::awaitable<void> Connector::drain(LinkId id, std::shared_ptr<Link> link) {
  LinkSlot& slot = *links_[id];
  while (slot.link == link && !slot.outbox.empty()) {
    const std::string message = std::move(slot.outbox.front());
    slot.outbox.pop_front();
    slot.outbox_bytes -= message.size();
    room_.cancel();
    co_await link->write(message);
  }
  if (slot.draining == link) slot.draining.reset();
}

bool Connector::another_link_keeps_up(LinkId id) const {
  for (const LinkId other : session_.attached_links()) {
    if (other != id && links_[other]->outbox_bytes <= kMaxOutboxBytes / 2) return true;
  }
  return false;
}

// Every change is logged (which link, and how many are up) and told to main.
void Connector::links_changed(LinkId id, const char* what) {
  const std::size_t up = session_.attached_links().size();
  log_info(what, {{"computer", options_.name},
                  {"url", links_[id]->url.url},
                  {"session", session_.initialized() ? "kept" : "new"},
                  {"links_up", std::to_string(up) + " of " + std::to_string(links_.size())}});
  if (on_links_changed_) on_links_changed_(up, links_.size());
}

// Once a minute per cause at most, with how many it stands for: a peer that keeps sending
// what cannot be relayed must not flood the journal. The causes are the kept session's
// few fixed words, so the map stays small.
void Connector::log_dropped(const Routed& routed, const char* from) {
  if (routed.dropped.empty()) return;
  const std::string cause =
      std::string("a message from ") + from + " was not relayed: " + routed.dropped;
  if (const auto count = dropped_[cause].due())
    log_warn(cause, {{"computer", options_.name}, {"count", std::to_string(*count)}});
}

net::awaitable<void> Connector::sleep(LinkSlot& slot, milliseconds duration) {
  slot.sleep_timer.expires_after(duration);
  co_await slot.sleep_timer.async_wait(kAwait);  // cancelled by stop()
}

}  // namespace sb::connect
