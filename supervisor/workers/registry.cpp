// The registry's process side: spawning workers, checking every frame they send, their
// exits and stalls, respawn with backoff, and shutdown (registry.hpp).
#include "supervisor/workers/registry.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <boost/asio/post.hpp>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>

#include "ipc/supervisor_frames.hpp"
#include "ipc/worker_frames.hpp"
#include "shared/log.hpp"
#include "supervisor/audit/audit_log.hpp"
#include "supervisor/workers/calls_in_flight.hpp"
#include "supervisor/workers/worker_record.hpp"

namespace sb::supervisor {

using json = nlohmann::json;

namespace {

constexpr auto kFirstBackoff = 100ms;
constexpr auto kMaxBackoff = 5s;
constexpr auto kBackoffResetAfter = 60s;
constexpr auto kShutdownGrace = 5s;

// Workers starting at once: enough to keep every core busy while some wait on exec and
// the loader, few enough to leave the supervisor its share of the CPU.
std::size_t start_window() {
  return std::max<std::size_t>(2, 2 * std::size_t{std::thread::hardware_concurrency()});
}

base::UniqueFd open_program(const std::filesystem::path& path) {
  base::UniqueFd program(::open(path.c_str(), O_PATH | O_CLOEXEC));
  if (!program.valid()) {
    throw std::runtime_error("cannot open the worker program " + path.string() + ": " +
                             std::strerror(errno));
  }
  return program;
}

// A close code as a metrics label. The worker reports it, and the worker is the less
// trusted side: only the codes docs/protocol.md names become labels of their own.
std::string close_code_label(std::uint64_t code) {
  static constexpr std::array<std::uint64_t, 10> kNamed{1000, 1001, 1002, 1006, 1007,
                                                        1009, 1011, 4002, 4003, 4005};
  return std::find(kNamed.begin(), kNamed.end(), code) != kNamed.end() ? std::to_string(code)
                                                                       : "other";
}

// A worker that beats on while it takes its time over a frame (stopped half-way, or
// trickling it) holds up every call of its computer and, for a large reply already under
// way, that reply's caller (docs/architecture.md, "Large replies"). A frame is written in
// one go and read at once, so one still unfinished after the stall limit is not a slow
// worker's: it gets as long as a silent worker, no longer.
bool left_frame_unfinished(WorkerRecord& worker, std::chrono::milliseconds limit) {
  const ipc::Channel& channel = *worker.channel;
  const auto now = std::chrono::steady_clock::now();
  if (!channel.inside_frame() || channel.frames_started() != worker.unfinished_frame) {
    worker.unfinished_frame = channel.frames_started();
    worker.unfinished_since = now;
    return false;
  }
  return now - worker.unfinished_since > limit;
}

}  // namespace

WorkerRegistry::WorkerRegistry(boost::asio::io_context& io,
                               const std::filesystem::path& worker_binary, AuditLog& audit,
                               Timings timings, ServiceNotifier store, LaunchWorker launch)
    : io_(io),
      timings_(timings),
      store_(std::move(store)),
      worker_binary_(worker_binary),
      worker_program_(open_program(worker_binary)),
      launch_(launch ? std::move(launch) : spawn_worker_processes(io)),
      audit_(audit),
      stall_timer_(io),
      park_timer_(io),
      in_flight_(std::make_unique<CallsInFlight>()),
      backstops_(io),
      start_window_(start_window()) {}

WorkerRegistry::~WorkerRegistry() {
  // A worker's process destroyed while it runs is killed and reaped.
  for (auto& worker : workers_) {
    if (worker->channel) worker->channel->close();
  }
}

void WorkerRegistry::start(const std::vector<config::Computer>& computers,
                           std::function<void()> all_up) {
  all_up_ = std::move(all_up);
  for (const auto& computer : computers) {
    workers_.push_back(make_worker_record(computer));
    queued_.push_back(workers_.back());
  }
  start_queued();
  watch_stalls();
  report_when_all_up();
}

// Queued workers start a few at a time: each spawn in a turn of the event loop of its own,
// so that the listener answers from the first turn however many computers there are, and
// no more than a few starting at once, so that a thousand processes loading themselves
// together do not starve the supervisor of CPU. A worker that is up (or gone) makes room
// for the next. One queued that a reload removed meanwhile is skipped.
void WorkerRegistry::start_queued() {
  if (start_posted_ || shutting_down_ || parking_ || queued_.empty()) return;
  start_posted_ = true;
  boost::asio::post(io_, [this] {
    start_posted_ = false;
    if (shutting_down_ || parking_ || starting_count() >= start_window_) return;
    while (!queued_.empty()) {
      const auto worker = queued_.front().lock();
      queued_.pop_front();
      if (worker && worker->state == WorkerRecord::State::kQueued) {
        spawn(worker);
        break;
      }
    }
    start_queued();
  });
}

std::size_t WorkerRegistry::starting_count() const {
  return static_cast<std::size_t>(
      std::count_if(workers_.begin(), workers_.end(),
                    [](const auto& w) { return w->state == WorkerRecord::State::kStarting; }));
}

void WorkerRegistry::report_when_all_up() {
  if (!all_up_ || !all_started()) return;
  auto all_up = std::move(all_up_);
  all_up_ = nullptr;
  all_up();
}

// The channel, the status board and the process of a worker; what failed, if any.
// Failures are answers, not exceptions carried out of here: a spawn that fails must cost
// nothing but a log line.
std::optional<std::string> WorkerRegistry::launch(WorkerRecord& worker, const std::string& segment,
                                                  ipc::ChannelEnd& parent_end) {
  ipc::ChannelEnds ends;
  try {
    ends = ipc::make_channel();
    worker.status = std::make_unique<ipc::StatusReader>(segment);
  } catch (const std::exception& error) {
    return std::string(error.what());  // names the call and the OS error already
  }
  parent_end = std::move(ends.sender);
  // A worker has nothing to say on stdout, which may be the audit stream.
  base::SpawnRequest request{
      .program = worker_binary_,
      .executable = worker_program_.get(),
      .args = {"--channel-fd", "3", "--descriptor-fd", "4", "--status-segment", segment},
      .descriptors = {{ends.receiver.frames.get(), 3},
                      {ends.receiver.descriptors.get(), 4},
                      {STDERR_FILENO, STDOUT_FILENO}},
  };
  // Under a service manager with a store, the record file it parks its session in should
  // this process die (docs/architecture.md, "Switching").
  const base::UniqueFd record_file(
      store_.has_store() ? ::memfd_create("switchboard-record", MFD_CLOEXEC) : -1);
  if (record_file.valid()) {
    request.args.insert(request.args.end(), {"--record-fd", "5"});
    request.descriptors.push_back({record_file.get(), 5});
  }
  auto launched = launch_(request);
  if (auto* failure = std::get_if<std::string>(&launched)) return "launching: " + *failure;
  if (record_file.valid()) {
    const std::string name = record_file_name(worker.name);
    worker.record_file = StoreEntry();  // the last process's, out of the store first
    store_.forget(name);
    store_.store(name, record_file.get());
    worker.record_file = StoreEntry(&store_, name);
  }
  worker.process = std::move(std::get<std::unique_ptr<WorkerProcess>>(launched));
  return std::nullopt;
}

void WorkerRegistry::spawn(const std::shared_ptr<WorkerRecord>& worker) {
  const std::string segment =
      "/switchboard-" + std::to_string(::getpid()) + "-" + std::to_string(next_segment_++);
  worker->started_at = std::chrono::steady_clock::now();
  worker->stall_reported = false;
  worker->said_hello = false;
  worker->expelled = false;
  // Each step takes descriptors or memory; out of either, this worker waits for its next
  // try (with the restart backoff, which also paces this log line) and the supervisor and
  // every other computer carry on.
  ipc::ChannelEnd parent_end;
  const auto failure = launch(*worker, segment, parent_end);
  if (failure) {
    log_error("cannot start a worker", {{"computer", worker->name}, {"error", *failure}});
    worker->status.reset();
    worker->state = WorkerRecord::State::kExited;
    mourn(worker, -1);
    return;
  }
  worker->pid = worker->process->pid();
  worker->state = WorkerRecord::State::kStarting;
  worker->channel = std::make_shared<ipc::Channel>(io_, std::move(parent_end));
  std::weak_ptr<WorkerRecord> weak = worker;
  worker->channel->start(
      [this, weak](ipc::Frame&& frame) {
        auto alive = weak.lock();
        if (!alive) return;
        try {
          on_frame(alive, std::move(frame));
        } catch (const std::exception& error) {
          // A frame's callbacks answer callers; a defect there fails that answer only.
          log_error("internal error while handling a worker's frame",
                    {{"computer", alive->name}, {"error", error.what()}});
        }
      },
      [this, weak](const std::string& violation) {
        auto alive = weak.lock();
        // A plain end of the channel is followed by the exit, which the wait below sees.
        if (alive && !violation.empty()) expel(alive, violation);
      });
  // A large reply starts on its way to the caller while the worker is still sending it
  // (docs/architecture.md, "Large replies").
  worker->channel->hand_over_large_bodies(
      kArrivingReplyFrom, [this, weak](const ipc::Frame& frame) {
        const auto alive = weak.lock();
        if (!alive || frame.type != ipc::FrameType::kReply) return false;
        const InFlightCall* call = in_flight_->find(frame.call_id, *alive);
        return call && call->reply_may_arrive;
      });
  configure(*worker);
  send_carried(*worker);
  worker->process->async_wait([this, worker](int wait_status) { on_exit(worker, wait_status); });
}

void WorkerRegistry::configure(WorkerRecord& worker) {
  if (!worker.channel) return;
  worker.channel->send(ipc::encode(ipc::Configure{.computer = worker.name,
                                                  .max_inflight = worker.max_inflight,
                                                  .sole_caller = worker.sole_caller,
                                                  .handshake = timings_.handshake,
                                                  .ping_interval = timings_.ping_interval,
                                                  .heartbeat = timings_.heartbeat,
                                                  .drain = drain_,
                                                  .max_buffer_bytes = worker_buffer_bytes_}));
}

void WorkerRegistry::on_frame(const std::shared_ptr<WorkerRecord>& worker, ipc::Frame&& frame) {
  if (worker->expelled) return;
  auto decoded = ipc::decode_worker_frame(std::move(frame));
  if (auto* malformed = std::get_if<ipc::Malformed>(&decoded))
    return expel(worker, malformed->reason);
  if (auto* hello = std::get_if<ipc::Hello>(&decoded)) return on_hello(worker, *hello);
  if (!worker->said_hello) return expel(worker, "spoke before its hello");
  if (auto* reply = std::get_if<ipc::Reply>(&decoded)) return on_reply(worker, std::move(*reply));
  if (auto* message = std::get_if<ipc::Message>(&decoded))
    return on_message(worker, std::move(*message));
  if (auto* parked = std::get_if<ipc::Parked>(&decoded))
    return on_parked(worker, std::move(*parked));
  on_event(worker, std::get<ipc::SessionEvent>(decoded));
}

void WorkerRegistry::on_hello(const std::shared_ptr<WorkerRecord>& worker,
                              const ipc::Hello& hello) {
  if (worker->said_hello) return expel(worker, "said hello twice");
  if (hello.pid != worker->pid) return expel(worker, "said hello with another process's pid");
  if (hello.protocol != ipc::kProtocolVersion || hello.build != ipc::build_id()) {
    // Both programs are opened at start and come from one package, so this is a binary
    // replaced from outside; a restart of the service starts both from what is installed.
    log_error("worker is of another build; restart the switchboard service",
              {{"computer", worker->name},
               {"worker_build", hello.build},
               {"worker_protocol", std::to_string(hello.protocol)},
               {"build", std::string(ipc::build_id())},
               {"protocol", std::to_string(ipc::kProtocolVersion)}});
    return stop(*worker);
  }
  worker->said_hello = true;
  worker->build = hello.build;
  if (worker->state == WorkerRecord::State::kStarting)
    worker->state = WorkerRecord::State::kRunning;
  worker->status->unlink();  // both sides have it mapped; the name is no longer needed
  start_queued();
  report_when_all_up();
}

// Chromium's rule for a less trusted process: a message out of contract ends the sender.
// Its computer reconnects to a fresh worker after the usual backoff.
void WorkerRegistry::expel(const std::shared_ptr<WorkerRecord>& worker, const std::string& reason) {
  if (worker->expelled) return;
  log_error("worker broke the IPC contract; killing it",
            {{"computer", worker->name}, {"pid", std::to_string(worker->pid)}, {"reason", reason}});
  stop(*worker);
}

// Nothing more it sends is read; its exit brings the respawn.
void WorkerRegistry::stop(WorkerRecord& worker) {
  worker.expelled = true;
  if (worker.channel) worker.channel->close();
  if (worker.process) worker.process->kill();
}

// A worker reports only sessions the supervisor handed it, by generation; the line it
// gets is the supervisor's, stamped with the computer's current name.
void WorkerRegistry::on_event(const std::shared_ptr<WorkerRecord>& worker,
                              const ipc::SessionEvent& event) {
  auto& sessions = worker->sessions;
  auto handed = [&](std::uint64_t generation, const std::string& peer) -> SessionRecord* {
    const auto found = sessions.find(generation);
    if (found == sessions.end() || found->second.peer != peer) return nullptr;
    return &found->second;
  };
  if (const auto* attach = std::get_if<ipc::AttachEvent>(&event)) {
    SessionRecord* session = handed(attach->generation, attach->peer);
    if (!session || session->attached) return expel(worker, "reported an attach it was not given");
    session->attached = true;
    session->attached_at = std::chrono::system_clock::now();
    ++worker->attaches;
  } else if (const auto* taken_up = std::get_if<ipc::TakenUpEvent>(&event)) {
    return on_taken_up(worker, *taken_up);
  } else if (const auto* takeover = std::get_if<ipc::TakeoverEvent>(&event)) {
    const SessionRecord* old_session = handed(takeover->old_generation, takeover->old_peer);
    const SessionRecord* new_session = handed(takeover->new_generation, takeover->new_peer);
    if (!old_session || !old_session->attached || !new_session)
      return expel(worker, "reported a takeover it was not given");
  } else {
    const auto& detach = std::get<ipc::DetachEvent>(event);
    const SessionRecord* session = handed(detach.generation, detach.peer);
    if (!session) return expel(worker, "reported a detach it was not given");
    // A socket closed before it was installed (the worker was leaving) never had its
    // vm_attach line: it gets no vm_detach either, so that the two always pair up.
    const bool attached = session->attached;
    if (session->carried && !session->taken_up) {
      lose_carried(*worker);
      note_carried_outcome(worker->name, "redialled");
    }
    sessions.erase(detach.generation);  // the worker shut the socket down; our copy closes
    if (!attached) return;
    ++worker->detaches[close_code_label(detach.code)];
  }
  write_event(*worker, event);
}

void WorkerRegistry::write_event(const WorkerRecord& worker, const ipc::SessionEvent& event) {
  json fields = ipc::event_fields(event);
  fields["computer"] = worker.name;
  audit_.write(ipc::event_name(event), std::move(fields));
}

// Its last frames (its computer's vm_detach above all) are read before it is mourned.
void WorkerRegistry::on_exit(const std::shared_ptr<WorkerRecord>& worker, int wait_status) {
  if (!worker->channel || worker->expelled) return mourn(worker, wait_status);
  worker->channel->drain([this, worker, wait_status] { mourn(worker, wait_status); });
}

void WorkerRegistry::mourn(const std::shared_ptr<WorkerRecord>& worker, int wait_status) {
  const bool was_retiring = worker->state == WorkerRecord::State::kRetiring;
  audit_lost_sessions(*worker);
  if (worker->status) worker->messages_dropped_before += worker->status->read().messages_dropped;
  if (worker->channel) worker->channel->close();
  worker->channel.reset();
  worker->process.reset();
  worker->status.reset();
  worker->record_file = StoreEntry();  // what it parked there, it parked nowhere
  // Its computer's calls may have run; they end now, not at their deadlines. A parked
  // session's calls cross with it.
  if (!worker->parked) fail_in_flight(*worker, ipc::CallStatus::kDisconnected);
  start_queued();  // if it was starting, it made room

  if (was_retiring || shutting_down_ || parking_) {
    worker->state = WorkerRecord::State::kExited;
    std::erase(retiring_, worker);
    if (parking_) return maybe_finish_parking();
    return maybe_finish_shutdown();
  }
  if (wait_status >= 0) {
    log_warn("worker exited; restarting it", {{"computer", worker->name},
                                              {"pid", std::to_string(worker->pid)},
                                              {"exit", base::describe_exit(wait_status)}});
  }
  schedule_respawn(worker);
}

void WorkerRegistry::schedule_respawn(const std::shared_ptr<WorkerRecord>& worker) {
  worker->state = WorkerRecord::State::kRestarting;
  ++worker->restarts;
  if (std::chrono::steady_clock::now() - worker->started_at >= kBackoffResetAfter)
    worker->backoff = kFirstBackoff;
  worker->respawn_timer = std::make_unique<boost::asio::steady_timer>(io_, worker->backoff);
  worker->backoff = std::min<std::chrono::milliseconds>(worker->backoff * 2, kMaxBackoff);
  worker->respawn_timer->async_wait(
      [this, weak = std::weak_ptr<WorkerRecord>(worker)](boost::system::error_code error) {
        auto alive = weak.lock();
        if (error || !alive || alive->state != WorkerRecord::State::kRestarting || shutting_down_ ||
            parking_)
          return;
        spawn(alive);
      });
}

// A worker that dies cannot write its computers' vm_detach lines. The supervisor wrote
// the vm_attach of every session still attached, so it writes the matching detach: each
// attach has exactly one detach, whoever writes it.
void WorkerRegistry::audit_lost_sessions(WorkerRecord& worker) {
  const auto now = std::chrono::system_clock::now();
  for (const auto& [generation, session] : worker.sessions) {
    // Nothing else shuts it down: the worker that would have is gone, and this copy would
    // keep the computer's connection open.
    if (session.socket.valid()) ::shutdown(session.socket.get(), SHUT_RDWR);
    if (session.carried && !session.taken_up) {
      lose_carried(worker);
      note_carried_outcome(worker.name, "redialled");
    }
    if (!session.attached) continue;
    ++worker.detaches[close_code_label(1006)];
    const auto attached_for =
        std::chrono::duration_cast<std::chrono::seconds>(now - session.attached_at).count();
    write_event(worker, ipc::DetachEvent{.peer = session.peer,
                                         .generation = generation,
                                         .code = 1006,
                                         .reason = "the computer's worker exited",
                                         .attached_for_secs = static_cast<std::uint64_t>(
                                             std::max<std::int64_t>(attached_for, 0))});
  }
  worker.sessions.clear();
}

void WorkerRegistry::watch_stalls() {
  stall_timer_.expires_after(timings_.heartbeat);
  stall_timer_.async_wait([this](boost::system::error_code error) {
    if (error || parking_) return;
    std::vector<std::shared_ptr<WorkerRecord>> watched = workers_;
    // A removed computer's worker that stalls before it could leave must not linger
    // holding its computer's socket either.
    watched.insert(watched.end(), retiring_.begin(), retiring_.end());
    for (auto& worker : watched) watch_one(worker);
    watch_stalls();
  });
}

void WorkerRegistry::watch_one(const std::shared_ptr<WorkerRecord>& worker) {
  // Silent since its spawn: it would hold a place in the start window for ever.
  if (worker->state == WorkerRecord::State::kStarting && !worker->expelled &&
      std::chrono::steady_clock::now() - worker->started_at > timings_.stall_kill) {
    log_error("worker did not say hello in time; killing it",
              {{"computer", worker->name}, {"pid", std::to_string(worker->pid)}});
    return stop(*worker);
  }
  if (worker->state != WorkerRecord::State::kRunning &&
      worker->state != WorkerRecord::State::kRetiring)
    return;
  if (!worker->status || worker->expelled) return;
  if (worker->channel && left_frame_unfinished(*worker, timings_.stall_kill))
    return expel(worker, "left a frame unfinished");
  worker->status->read();  // notes a record kept torn
  if (std::chrono::milliseconds(worker->status->torn_for_ms()) > timings_.heartbeat_stale)
    return expel(worker, "kept its status record torn");
  const auto age = std::chrono::milliseconds(worker->status->heartbeat_age_ms());
  if (age > timings_.stall_kill) {
    log_error("worker silent too long; killing it",
              {{"computer", worker->name}, {"pid", std::to_string(worker->pid)}});
    worker->process->kill();
  } else if (age > timings_.heartbeat_stale && !worker->stall_reported) {
    worker->stall_reported = true;
    ++worker->stalls;
    log_warn("worker stalled; its computer is reported not ready", {{"computer", worker->name}});
  } else if (age <= timings_.heartbeat_stale && worker->stall_reported) {
    worker->stall_reported = false;
    log_info("worker recovered", {{"computer", worker->name}});
  }
}

void WorkerRegistry::shutdown(std::function<void()> done) {
  shutting_down_ = true;
  shutdown_done_ = std::move(done);
  stall_timer_.cancel();
  for (auto& worker : workers_) retire(worker, /*revoke=*/false);
  workers_.clear();
  // A worker that does not leave in time is killed; its exit completes the shutdown.
  stall_timer_.expires_after(kShutdownGrace);
  stall_timer_.async_wait([this](boost::system::error_code error) {
    if (error) return;
    for (auto& worker : retiring_) {
      if (worker->process) worker->process->kill();
    }
  });
  maybe_finish_shutdown();
}

void WorkerRegistry::maybe_finish_shutdown() {
  if (!shutting_down_ || !retiring_.empty() || !shutdown_done_) return;
  stall_timer_.cancel();
  auto done = std::move(shutdown_done_);
  shutdown_done_ = nullptr;
  done();
}

}  // namespace sb::supervisor
