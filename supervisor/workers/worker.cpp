// One worker as the supervisor knows it (worker.hpp).
#include "supervisor/workers/worker.hpp"

#include <fcntl.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <fstream>

#include "base/unix_time.hpp"
#include "ipc/parked_session.hpp"
#include "ipc/supervisor_frames.hpp"
#include "shared/log.hpp"

namespace sb::supervisor {

using namespace std::chrono_literals;

namespace {

constexpr auto kFirstBackoff = 100ms;
constexpr auto kMaxBackoff = 5s;
constexpr auto kBackoffResetAfter = 60s;

// Sockets handed over that never reported an attach (an upgrade that failed) are
// forgotten past this many, oldest first.
constexpr std::size_t kMaxUnattachedSessions = 16;

// Calls waiting for a carried session to be taken up: a switch takes milliseconds, so
// more than this means a flood, which waits for nobody.
constexpr std::size_t kMaxHeldCalls = 1024;

// A close code as a metrics label. The worker reports it, and the worker is the less
// trusted side: only the codes docs/protocol.md names become labels of their own.
std::string close_code_label(std::uint64_t code) {
  static constexpr std::array<std::uint64_t, 10> kNamed{1000, 1001, 1002, 1006, 1007,
                                                        1009, 1011, 4002, 4003, 4005};
  return std::find(kNamed.begin(), kNamed.end(), code) != kNamed.end() ? std::to_string(code)
                                                                       : "other";
}

void forget_oldest_unattached(std::map<std::uint64_t, SessionRecord>& sessions) {
  const auto unattached = std::count_if(sessions.begin(), sessions.end(),
                                        [](const auto& entry) { return !entry.second.attached; });
  if (static_cast<std::size_t>(unattached) <= kMaxUnattachedSessions) return;
  const auto oldest = std::find_if(sessions.begin(), sessions.end(),
                                   [](const auto& entry) { return !entry.second.attached; });
  sessions.erase(oldest);
}

// From /proc/PID/status: memory, and the sandbox the worker entered (docs/architecture.md,
// "Sandbox"): NoNewPrivs 1 and Seccomp 2 (a filter).
ProcessFacts process_facts(int pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  ProcessFacts facts;
  bool no_new_privs = false;
  bool filtered = false;
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) facts.resident_kib = std::atoll(line.c_str() + 6);
    if (line.rfind("NoNewPrivs:", 0) == 0) no_new_privs = std::atoi(line.c_str() + 11) == 1;
    if (line.rfind("Seccomp:", 0) == 0) filtered = std::atoi(line.c_str() + 8) == 2;
  }
  facts.sandboxed = no_new_privs && filtered;
  return facts;
}

worker_news::Violation violation(std::string reason) {
  return {std::move(reason)};
}

}  // namespace

Worker::Worker(const config::Computer& computer)
    : name_(computer.name),
      verifier_(computer.secret),
      max_inflight_(computer.max_inflight),
      sole_caller_(computer.sole_caller) {}

// A worker's process destroyed while it runs is killed and reaped.
Worker::~Worker() {
  if (channel_) channel_->close();
}

std::optional<std::string> Worker::update(const config::Computer& computer) {
  max_inflight_ = computer.max_inflight;
  sole_caller_ = computer.sole_caller;
  if (computer.name == name_) return std::nullopt;
  return std::exchange(name_, computer.name);
}

ipc::Frame Worker::configuration(const Timings& timings, std::chrono::milliseconds drain,
                                 std::uint64_t max_buffer_bytes) const {
  return ipc::encode(ipc::Configure{.computer = name_,
                                    .max_inflight = max_inflight_,
                                    .sole_caller = sole_caller_,
                                    .handshake = timings.handshake,
                                    .ping_interval = timings.ping_interval,
                                    .heartbeat = timings.heartbeat,
                                    .drain = drain,
                                    .max_buffer_bytes = max_buffer_bytes});
}

// ---- its process ----

void Worker::started(std::unique_ptr<WorkerProcess> process,
                     std::unique_ptr<ipc::StatusReader> status,
                     std::shared_ptr<ipc::Channel> channel) {
  process_ = std::move(process);
  status_ = std::move(status);
  channel_ = std::move(channel);
  pid_ = process_->pid();
  state_ = State::kStarting;
  started_at_ = std::chrono::steady_clock::now();
  stall_reported_ = false;
  said_hello_ = false;
  expelled_ = false;
}

void Worker::failed_to_start() {
  started_at_ = std::chrono::steady_clock::now();
  state_ = State::kExited;
}

void Worker::on_exit(std::function<void(int wait_status)> exited) {
  if (process_) process_->async_wait(std::move(exited));
}

void Worker::stop() {
  expelled_ = true;
  if (channel_) channel_->close();
  if (process_) process_->kill();
}

void Worker::kill() {
  if (process_) process_->kill();
}

void Worker::send(ipc::Frame frame) const {
  if (channel_) channel_->send(std::move(frame));
}

void Worker::ended() {
  if (status_) messages_dropped_before_ += status_->read().messages_dropped;
  if (channel_) channel_->close();
  channel_.reset();
  process_.reset();
  status_.reset();
  record_file_ = StoreEntry();  // what it parked there, it parked nowhere
}

void Worker::restart_after_backoff(boost::asio::io_context& io, std::function<void()> respawn) {
  state_ = State::kRestarting;
  ++restarts_;
  if (std::chrono::steady_clock::now() - started_at_ >= kBackoffResetAfter)
    backoff_ = kFirstBackoff;
  respawn_timer_ = std::make_unique<boost::asio::steady_timer>(io, backoff_);
  backoff_ = std::min<std::chrono::milliseconds>(backoff_ * 2, kMaxBackoff);
  respawn_timer_->async_wait([respawn = std::move(respawn)](boost::system::error_code error) {
    if (!error) respawn();
  });
}

void Worker::cancel_restart() {
  if (respawn_timer_) respawn_timer_->cancel();
}

// ---- its frames ----

WorkerNews Worker::read(ipc::Frame&& frame, std::uint64_t next_call_id) {
  if (expelled_) return worker_news::Nothing{};
  auto decoded = ipc::decode_worker_frame(std::move(frame));
  if (auto* malformed = std::get_if<ipc::Malformed>(&decoded)) return violation(malformed->reason);
  if (auto* hello = std::get_if<ipc::Hello>(&decoded)) return check_hello(*hello);
  if (!said_hello_) return violation("spoke before its hello");
  if (auto* reply = std::get_if<ipc::Reply>(&decoded)) {
    if (reply->call_id >= next_call_id) return violation("replied to a call never made");
    return std::move(*reply);
  }
  if (auto* message = std::get_if<ipc::Message>(&decoded)) {
    if (message->call_id >= next_call_id) return violation("sent a message for a call never made");
    return std::move(*message);
  }
  if (auto* parked = std::get_if<ipc::Parked>(&decoded))
    return check_parked(std::move(*parked), next_call_id);
  return check_event(std::get<ipc::SessionEvent>(decoded));
}

WorkerNews Worker::check_hello(const ipc::Hello& hello) {
  if (said_hello_) return violation("said hello twice");
  if (hello.pid != pid_) return violation("said hello with another process's pid");
  if (hello.protocol != ipc::kProtocolVersion || hello.build != ipc::build_id()) {
    // Both programs are opened at start and come from one package, so this is a binary
    // replaced from outside; a restart of the service starts both from what is installed.
    log_error("worker is of another build; restart the switchboard service",
              {{"computer", name_},
               {"worker_build", hello.build},
               {"worker_protocol", std::to_string(hello.protocol)},
               {"build", std::string(ipc::build_id())},
               {"protocol", std::to_string(ipc::kProtocolVersion)}});
    stop();
    return worker_news::OtherBuild{};
  }
  said_hello_ = true;
  build_ = hello.build;
  if (state_ == State::kStarting) state_ = State::kRunning;
  status_->unlink();  // both sides have it mapped; the name is no longer needed
  return worker_news::Greeted{};
}

// A worker reports only sessions the supervisor handed it, by generation; the line it
// gets is the supervisor's.
WorkerNews Worker::check_event(const ipc::SessionEvent& event) {
  auto handed = [&](std::uint64_t generation, const std::string& peer) -> SessionRecord* {
    const auto found = sessions_.find(generation);
    if (found == sessions_.end() || found->second.peer != peer) return nullptr;
    return &found->second;
  };
  if (const auto* attach = std::get_if<ipc::AttachEvent>(&event)) {
    SessionRecord* session = handed(attach->generation, attach->peer);
    if (!session || session->attached) return violation("reported an attach it was not given");
    session->attached = true;
    session->attached_at = std::chrono::system_clock::now();
    ++attaches_;
    return worker_news::Session{.line = event};
  }
  if (const auto* taken_up = std::get_if<ipc::TakenUpEvent>(&event))
    return check_taken_up(*taken_up);
  if (const auto* takeover = std::get_if<ipc::TakeoverEvent>(&event)) {
    const SessionRecord* old_session = handed(takeover->old_generation, takeover->old_peer);
    const SessionRecord* new_session = handed(takeover->new_generation, takeover->new_peer);
    if (!old_session || !old_session->attached || !new_session)
      return violation("reported a takeover it was not given");
    return worker_news::Session{.line = event};
  }
  const auto& detach = std::get<ipc::DetachEvent>(event);
  const SessionRecord* session = handed(detach.generation, detach.peer);
  if (!session) return violation("reported a detach it was not given");
  worker_news::Session news{.carried_lost = session->carried && !session->taken_up};
  // A socket closed before it was installed (the worker was leaving) never had its
  // vm_attach line: it gets no vm_detach either, so that the two always pair up.
  if (session->attached) {
    ++detaches_[close_code_label(detach.code)];
    news.line = event;
  }
  sessions_.erase(detach.generation);  // the worker shut the socket down; our copy closes
  return news;
}

WorkerNews Worker::check_taken_up(const ipc::TakenUpEvent& event) {
  const auto session = sessions_.find(event.generation);
  if (session == sessions_.end() || !session->second.carried || session->second.taken_up ||
      session->second.peer != event.peer)
    return violation("reported a resume it was not given");
  session->second.taken_up = true;
  session->second.taken_up_at = std::chrono::system_clock::now();
  ++sessions_taken_up_;
  carried_.reset();
  return worker_news::Session{.line = event, .carried_taken_up = true};
}

// Its record is checked against the supervisor's own record of the session before
// anything relies on it, and the supervisor's copy of the socket is put aside for the
// next process.
WorkerNews Worker::check_parked(ipc::Parked&& parked, std::uint64_t next_call_id) {
  if (!parking_ || parked_) return violation("parked unasked or twice");
  if (parked.record.empty()) return worker_news::Nothing{};  // it had no session to leave
  std::string why;
  const auto record = ipc::decode_parked_session(parked.record, why);
  if (!record) return violation("parked a record that does not read: " + why);
  const auto session = sessions_.find(record->generation);
  if (session == sessions_.end() || !session->second.attached ||
      session->second.peer != record->peer)
    return violation("parked a session it was not given");
  if (!session->second.socket.valid()) {
    // No copy of its socket was made (out of descriptors at its attach): it cannot cross.
    // It ends when the worker exits, which writes its vm_detach.
    log_warn("a parked session cannot be carried: no copy of its socket", {{"computer", name_}});
    return worker_news::Nothing{};
  }
  for (const auto& call : record->calls) {
    if (call.call_id >= next_call_id) return violation("parked a call never made");
  }
  parked_ = CarriedSession{
      .verifier = render_verifier(verifier_),
      .computer = name_,
      .generation = record->generation,
      .peer = record->peer,
      .attached_at_ms = unix_time<std::chrono::milliseconds>(session->second.attached_at),
      .socket = stored_socket_name(name_, record->generation),
      .record = std::move(parked.record)};
  parked_socket_ = std::move(session->second.socket);
  session->second.stored.keep();  // in the store it stays, for the next process
  sessions_.erase(session);
  return worker_news::Nothing{};
}

WorkerHealth Worker::watch(const Timings& timings) {
  // Silent since its spawn: it would hold a place in the start window for ever.
  if (state_ == State::kStarting && !expelled_ &&
      std::chrono::steady_clock::now() - started_at_ > timings.stall_kill)
    return WorkerHealth::kNoHello;
  if (state_ != State::kRunning && state_ != State::kRetiring) return WorkerHealth::kFine;
  if (!status_ || expelled_) return WorkerHealth::kFine;
  if (channel_ && left_frame_unfinished(timings.stall_kill)) return WorkerHealth::kFrameUnfinished;
  status_->read();  // notes a record kept torn
  if (std::chrono::milliseconds(status_->torn_for_ms()) > timings.heartbeat_stale)
    return WorkerHealth::kRecordTorn;
  const auto age = std::chrono::milliseconds(status_->heartbeat_age_ms());
  if (age > timings.stall_kill) return WorkerHealth::kSilent;
  if (age > timings.heartbeat_stale && !stall_reported_) {
    stall_reported_ = true;
    ++stalls_;
    return WorkerHealth::kStalled;
  }
  if (age <= timings.heartbeat_stale && stall_reported_) {
    stall_reported_ = false;
    return WorkerHealth::kRecovered;
  }
  return WorkerHealth::kFine;
}

// A worker that beats on while it takes its time over a frame (stopped half-way, or
// trickling it) holds up every call of its computer and, for a large reply already under
// way, that reply's caller (docs/architecture.md, "Large replies"). A frame is written in
// one go and read at once, so one still unfinished after the stall limit is not a slow
// worker's: it gets as long as a silent worker, no longer.
bool Worker::left_frame_unfinished(std::chrono::milliseconds limit) {
  const auto now = std::chrono::steady_clock::now();
  if (!channel_->inside_frame() || channel_->frames_started() != unfinished_frame_) {
    unfinished_frame_ = channel_->frames_started();
    unfinished_since_ = now;
    return false;
  }
  return now - unfinished_since_ > limit;
}

// ---- its computer's sessions ----

HandOver Worker::hand_over(base::UniqueFd& socket, std::string upgrade_bytes,
                           const std::string& peer, const ServiceNotifier& store) {
  if (!channel_ || !channel_->is_open()) return HandOver::kWorkerUnavailable;
  ++generation_;
  // The supervisor's own copy, for a switch in place (SessionRecord). Without one (out of
  // descriptors) the session is served all the same; it just cannot be carried.
  SessionRecord& session = sessions_[generation_] = SessionRecord{
      .peer = peer, .socket = base::UniqueFd(::fcntl(socket.get(), F_DUPFD_CLOEXEC, 0))};
  // Kept by the service manager too, should this process die (docs/architecture.md,
  // "Switching").
  if (session.socket.valid() && store.has_store()) {
    const std::string name = stored_socket_name(name_, generation_);
    store.store(name, session.socket.get());
    session.stored = StoreEntry(&store, name);
  }
  forget_oldest_unattached(sessions_);
  channel_->send(ipc::encode(ipc::Attach{.socket = std::move(socket),
                                         .peer = peer,
                                         .generation = generation_,
                                         .max_inflight = max_inflight_,
                                         .upgrade_bytes = std::move(upgrade_bytes)}));
  return HandOver::kDone;
}

std::vector<ipc::DetachEvent> Worker::lose_sessions(bool& carried_lost) {
  std::vector<ipc::DetachEvent> lines;
  const auto now = std::chrono::system_clock::now();
  for (const auto& [generation, session] : sessions_) {
    // Nothing else shuts it down: the worker that would have is gone, and this copy would
    // keep the computer's connection open.
    if (session.socket.valid()) ::shutdown(session.socket.get(), SHUT_RDWR);
    if (session.carried && !session.taken_up) carried_lost = true;
    if (!session.attached) continue;
    ++detaches_[close_code_label(1006)];
    const auto attached_for =
        std::chrono::duration_cast<std::chrono::seconds>(now - session.attached_at).count();
    lines.push_back(ipc::DetachEvent{
        .peer = session.peer,
        .generation = generation,
        .code = 1006,
        .reason = "the computer's worker exited",
        .attached_for_secs = static_cast<std::uint64_t>(std::max<std::int64_t>(attached_for, 0))});
  }
  sessions_.clear();
  return lines;
}

const SessionRecord* Worker::live_session(std::uint64_t* generation) const {
  return session_named(status_ ? status_->read().generation : 0, generation);
}

const SessionRecord* Worker::session_named(std::uint64_t board_generation,
                                           std::uint64_t* generation) const {
  const auto named = sessions_.find(board_generation);
  if (named != sessions_.end() && named->second.attached) {
    *generation = named->first;
    return &named->second;
  }
  for (auto it = sessions_.rbegin(); it != sessions_.rend(); ++it) {
    if (it->second.attached) {
      *generation = it->first;
      return &it->second;
    }
  }
  return nullptr;
}

// ---- what the routes and `switchboard workers` see ----

// The status record, with the peer and generation taken from the supervisor's own record
// of the live session (the one the worker names, if it was handed over and attached).
ipc::ComputerStatus Worker::read_status() const {
  ipc::ComputerStatus current = status_->read();
  // A state the worker cannot mean reads as no computer at all.
  if (current.state > ipc::ComputerState::kReady) current.state = ipc::ComputerState::kIdle;
  // The record just read names the live session: one read of the board, not two.
  std::uint64_t generation = 0;
  const SessionRecord* session = session_named(current.generation, &generation);
  current.peer = session ? session->peer : std::string();
  current.generation = generation;
  return current;
}

bool Worker::responsive(std::chrono::milliseconds stale) const {
  return status_ && status_->heartbeat_age_ms() <= stale.count() &&
         status_->torn_for_ms() < stale.count();
}

ComputerView Worker::view(std::chrono::milliseconds stale) const {
  ComputerView view{.name = name_};
  if (!running()) return view;
  view.status = read_status();
  view.attached = view.status.state != ipc::ComputerState::kIdle;
  view.ready = view.status.state == ipc::ComputerState::kReady && responsive(stale);
  return view;
}

WorkerRow Worker::row(std::chrono::milliseconds stale) {
  WorkerRow row{.computer = name_,
                .pid = has_process() ? pid_ : 0,
                .max_in_flight = static_cast<std::uint32_t>(max_inflight_),
                .restarts = restarts_,
                .attaches = attaches_,
                .detaches = detaches_,
                .stalls = stalls_,
                .build = build_,
                .sessions_taken_up = sessions_taken_up_};
  row.messages_dropped = messages_dropped_before_;
  if (state_ == State::kRestarting || expelled_) {
    row.state = "restarting";
  } else if (state_ != State::kRunning || !status_) {
    row.state = "starting";
  } else {
    const auto status = read_status();
    row.torn_reads = status_->torn_reads();
    row.messages_dropped += status.messages_dropped;
    row.in_flight = status.in_flight;
    row.max_in_flight =
        status.max_in_flight ? status.max_in_flight : static_cast<std::uint32_t>(max_inflight_);
    row.attached = status.state != ipc::ComputerState::kIdle;
    if (row.attached)
      row.attached_for_secs =
          (unix_time_now<std::chrono::milliseconds>() - status.attached_at_ms) / 1000;
    std::uint64_t generation = 0;
    const SessionRecord* session = session_named(status.generation, &generation);
    if (session && session->taken_up)
      row.taken_up_at_ms = unix_time<std::chrono::milliseconds>(session->taken_up_at);
    if (!responsive(stale)) {
      row.state = "stalled";
    } else {
      row.state = status.state == ipc::ComputerState::kReady         ? "ready"
                  : status.state == ipc::ComputerState::kHandshaking ? "handshaking"
                                                                     : "idle";
    }
  }
  if (row.pid) {
    const auto& facts = recent_facts();
    row.resident_kib = facts.resident_kib;
    row.sandboxed = facts.sandboxed;
  }
  return row;
}

// However often rows are asked for (a scrape, `switchboard workers`), its /proc is read at
// most once a second: its memory does not move faster than anyone looks.
const ProcessFacts& Worker::recent_facts() {
  constexpr auto kFactsFor = std::chrono::seconds(1);
  const auto now = std::chrono::steady_clock::now();
  if (facts_pid_ != pid_ || now - facts_read_at_ >= kFactsFor) {
    facts_ = process_facts(pid_);
    facts_pid_ = pid_;
    facts_read_at_ = now;
  }
  return facts_;
}

// ---- switching in place ----

bool Worker::ask_to_park(std::chrono::milliseconds drain) {
  cancel_restart();
  if (!has_process()) {
    state_ = State::kExited;
    return false;
  }
  parking_ = true;
  send(ipc::encode(ipc::Park{drain}));
  return true;
}

std::optional<std::pair<CarriedSession, base::UniqueFd>> Worker::take_parked() {
  if (!parked_) return std::nullopt;
  std::pair<CarriedSession, base::UniqueFd> taken{std::move(*parked_), std::move(parked_socket_)};
  parked_.reset();
  return taken;
}

bool Worker::carry_in(const CarriedSession& session, base::UniqueFd socket, StoreEntry stored,
                      std::set<std::uint64_t> calls) {
  if (carried_) return false;
  generation_ = std::max(generation_, session.generation);
  sessions_[session.generation] = SessionRecord{
      .peer = session.peer,
      .attached = true,
      .attached_at =
          std::chrono::system_clock::time_point(std::chrono::milliseconds(session.attached_at_ms)),
      .socket = std::move(socket),
      .stored = std::move(stored),
      .carried = true};
  carried_ = CarriedIn{
      .generation = session.generation, .record = session.record, .calls = std::move(calls)};
  awaiting_take_up_ = true;
  return true;
}

// The carried session, on a copy of the supervisor's socket, with the calls that have a
// caller again.
std::optional<ipc::Frame> Worker::take_up_frame(bool& failed) {
  if (!carried_ || carried_->sent || !channel_) return std::nullopt;
  carried_->sent = true;
  const auto session = sessions_.find(carried_->generation);
  if (session == sessions_.end()) return std::nullopt;
  base::UniqueFd copy(::fcntl(session->second.socket.get(), F_DUPFD_CLOEXEC, 0));
  if (!copy.valid()) {
    failed = true;
    return std::nullopt;
  }
  return ipc::encode(ipc::TakeUp{.socket = std::move(copy),
                                 .taken_up_calls = carried_->taken_up,
                                 .record = std::move(carried_->record)});
}

std::set<std::uint64_t> Worker::drop_carried() {
  if (!carried_) return {};
  auto calls = std::move(carried_->calls);
  carried_.reset();
  return calls;
}

bool Worker::room_to_hold() const {
  return held_calls_.size() < kMaxHeldCalls;
}

std::vector<ipc::Frame> Worker::release_held() {
  awaiting_take_up_ = false;
  return std::exchange(held_calls_, {});
}

}  // namespace sb::supervisor
