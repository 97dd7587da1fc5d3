// Session's part in a switch in place (session.hpp; docs/architecture.md, "Switching"):
// leaving the computer's socket at a message boundary with a record of where the session
// stands, and taking a session up from such a record in another worker.
#include <algorithm>
#include <utility>

#include "worker/session.hpp"

namespace sb::worker {

void Session::park(std::chrono::milliseconds drain,
                   std::function<void(ipc::ParkedSession)> parked) {
  if (!live() || on_parked_) return;  // a session already closing ends on its own
  on_parked_ = std::move(parked);
  read_on();             // to the boundary, where the socket stops the reader
  tick_timer_.cancel();  // no more pings: one could be under way at the boundary
  park_timer_.expires_after(drain);
  park_timer_.async_wait([weak = weak_from_this()](beast::error_code error) {
    const auto self = weak.lock();
    if (!error && self) self->give_up_parking();
  });
  try_park();
}

// Parks once the handshake is done, nothing is being written and the reader has stopped
// at a message boundary; each of those, as it comes about, tries again.
void Session::try_park() {
  if (!on_parked_ || phase_ != Phase::kReady || writing_ || !outbox_.empty()) return;
  SessionSocket& socket = ws_.next_layer();
  if (socket.writes_in_flight() > 0) {  // a pong of Beast's own: back here when it is done
    socket.when_writes_done([weak = weak_from_this()] {
      if (const auto self = weak.lock()) self->try_park();
    });
    return;
  }
  if (!socket.parked()) {
    socket.park([weak = weak_from_this()] {
      if (const auto self = weak.lock()) self->try_park();
    });
    return;
  }
  phase_ = Phase::kParked;
  park_timer_.cancel();
  tick_timer_.cancel();
  release_timer_.cancel();
  const auto parked = std::exchange(on_parked_, nullptr);
  parked(take_record());
  hooks_.status_changed();
}

// The drain is over and the session is still mid-message (or its computer takes no more
// bytes): it cannot be carried, so it closes as on a shutdown and its computer redials.
void Session::give_up_parking() {
  if (!on_parked_) return;
  on_parked_ = nullptr;
  log_warn("computer could not be left at a message boundary in time; closing it",
           {{"computer", settings_.computer}, {"peer", settings_.peer}});
  SessionSocket& socket = ws_.next_layer();
  if (socket.parked()) {
    // The reader has stopped for good, so no close handshake can complete: the
    // connection is dropped, and the session ends here.
    return finish(close_code::kGoingAway);
  }
  socket.unpark();
  close(close_code::kGoingAway);
}

ipc::ParkedSession Session::take_record() {
  fail_asks_before_parking();
  fail_task_conversations_before_parking();
  ipc::ParkedSession record{.generation = settings_.generation,
                            .peer = settings_.peer,
                            .max_inflight = settings_.max_inflight,
                            .attached_at_ms = attached_at_ms_,
                            .attached_at = attached_at_,
                            .server_json = server_json_,
                            .offers = offers_,
                            .next_id = pending_.next_id(),
                            .next_route_key = next_route_key_,
                            .listen_uris = {listened_uris_.begin(), listened_uris_.end()},
                            .newest_listen = newest_listen_,
                            .active_listen = active_listen_,
                            .log_level = log_level_,
                            .unread = ws_.next_layer().take_unread()};
  for (const auto& [id, call] : pending_.calls()) {
    // A retry too large to carry is not asked for after the switch.
    const bool retry_fits = call.ask_params.size() <= ipc::kMaxParkedRetryBytes;
    record.calls.push_back(
        ipc::ParkedCall{.id = id,
                        .call_id = call.call_id,
                        .caller = call.caller,
                        .stream = call.stream,
                        .progress_token = call.progress_token,
                        .timeout = call.timeout,
                        .deadline = call.deadline.at(),
                        .last_moment = call.last_moment,
                        .ask_method = retry_fits ? call.ask_method : std::string(),
                        .ask_params = retry_fits ? call.ask_params : std::string(),
                        .ask_rounds = static_cast<std::uint64_t>(call.ask_rounds)});
  }
  for (const auto& [key, route] : routed_) {
    record.routed.push_back(ipc::ParkedRoute{
        .key = key, .pending_id = route.pending_id, .original_id = route.original_id});
  }
  pending_.take_all();  // their deadlines go with them
  routed_.clear();
  return record;
}

void Session::begin_taken_up(ipc::ParkedSession record, const std::vector<std::uint64_t>& taken_up,
                             std::function<void(std::shared_ptr<ComputerSession>)> installed) {
  configure_stream();
  ws_.next_layer().swallow_writes(true);
  ws_.async_accept(
      net::buffer(kReplayedUpgrade.data(), kReplayedUpgrade.size()),
      [self = shared_from_this(), record = std::move(record), taken_up,
       installed = std::move(installed)](beast::error_code error) mutable {
        self->ws_.next_layer().swallow_writes(false);
        if (error || self->phase_ != Phase::kUpgrading) {
          log_error("a parked session could not be taken up",
                    {{"computer", self->settings_.computer}, {"error", error.message()}});
          self->phase_ = Phase::kHandshaking;  // it was attached: it gets its vm_detach
          return self->finish(close_code::kAbnormal);
        }
        self->restore(std::move(record), taken_up);
        installed(self);
      });
}

void Session::restore(ipc::ParkedSession record, const std::vector<std::uint64_t>& taken_up) {
  phase_ = Phase::kReady;
  attached_at_ms_ = record.attached_at_ms;
  attached_at_ = record.attached_at;
  server_json_ = std::move(record.server_json);
  offers_ = record.offers;
  pending_.continue_ids_from(record.next_id);
  next_route_key_ = record.next_route_key;
  listened_uris_ = {record.listen_uris.begin(), record.listen_uris.end()};
  newest_listen_ = record.newest_listen;
  active_listen_ = record.active_listen;
  log_level_ = std::move(record.log_level);
  std::vector<std::uint64_t> orphans;
  for (auto& call : record.calls) {
    pending_.put_back(call.id, PendingCall{.call_id = call.call_id,
                                           .caller = std::move(call.caller),
                                           .stream = call.stream,
                                           .progress_token = std::move(call.progress_token),
                                           .timeout = call.timeout,
                                           .last_moment = call.last_moment,
                                           .ask_method = std::move(call.ask_method),
                                           .ask_params = std::move(call.ask_params),
                                           .ask_rounds = static_cast<int>(call.ask_rounds)});
    if (std::find(taken_up.begin(), taken_up.end(), call.call_id) == taken_up.end()) {
      orphans.push_back(call.id);
    } else {
      set_deadline(call.id, call.deadline);
    }
  }
  for (auto& route : record.routed) {
    routed_.emplace(route.key, RoutedRequest{route.pending_id, std::move(route.original_id)});
  }
  read_next();
  schedule_tick();
  // Their callers' connections did not cross (a crash, a pod's socket, a caller that hung
  // up during the switch): the computer may stop working on them.
  for (const auto id : orphans) end_early(id, "the switchboard restarted without its caller");
  hooks_.status_changed();
}

std::shared_ptr<ComputerSession> take_up_session(
    net::io_context& io, base::UniqueFd socket, ipc::ParkedSession record,
    const std::vector<std::uint64_t>& taken_up, SessionSettings settings, SessionHooks hooks,
    std::function<void(std::shared_ptr<ComputerSession>)> installed) {
  settings.generation = record.generation;
  settings.peer = record.peer;
  settings.max_inflight = record.max_inflight;
  std::string unread = std::move(record.unread);
  auto session = std::make_shared<Session>(
      io, SessionSocket(adopt_tcp_socket(io, std::move(socket)), std::move(unread)), std::string(),
      std::move(settings), std::move(hooks));
  session->begin_taken_up(std::move(record), taken_up, std::move(installed));
  return session;
}

}  // namespace sb::worker
