// The registry's process side: spawning workers, acting on what each frame they send comes
// to (Worker::read checks it), their exits and stalls, respawn, and shutdown (registry.hpp).
#include "supervisor/workers/registry.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>

#include "ipc/worker_frames.hpp"
#include "shared/log.hpp"
#include "supervisor/audit/audit_log.hpp"
#include "supervisor/workers/calls_in_flight.hpp"
#include "supervisor/workers/worker.hpp"

namespace sb::supervisor {

using json = nlohmann::json;
using namespace std::chrono_literals;

namespace {

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
  // A worker's exit watch keeps it alive; its channel closes with the registry all the same.
  for (auto& worker : workers_) {
    if (worker->channel()) worker->channel()->close();
  }
}

void WorkerRegistry::start(const std::vector<config::Computer>& computers,
                           std::function<void()> all_up) {
  all_up_ = std::move(all_up);
  for (const auto& computer : computers) {
    workers_.push_back(std::make_shared<Worker>(computer));
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
      if (worker && worker->state() == Worker::State::kQueued) {
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
                    [](const auto& w) { return w->state() == Worker::State::kStarting; }));
}

void WorkerRegistry::report_when_all_up() {
  if (!all_up_ || !all_started()) return;
  auto all_up = std::move(all_up_);
  all_up_ = nullptr;
  all_up();
}

// Starts a worker's process, with its channel and status board; what failed, if any.
// Failures are answers, not exceptions carried out of here: a spawn that fails must cost
// nothing but a log line.
std::optional<std::string> WorkerRegistry::launch(Worker& worker, std::string_view segment) {
  ipc::ChannelEnds ends;
  std::unique_ptr<ipc::StatusReader> status;
  try {
    ends = ipc::make_channel();
    status = std::make_unique<ipc::StatusReader>(std::string(segment));
  } catch (const std::exception& error) {
    return std::string(error.what());  // names the call and the OS error already
  }
  // A worker has nothing to say on stdout, which may be the audit stream.
  base::SpawnRequest request{
      .program = worker_binary_,
      .executable = worker_program_.get(),
      .args = {"--channel-fd", "3", "--descriptor-fd", "4", "--status-segment",
               std::string(segment)},
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
    const std::string name = record_file_name(worker.name());
    worker.keep_record_file(StoreEntry());  // the last process's, out of the store first
    store_.forget(name);
    store_.store(name, record_file.get());
    worker.keep_record_file(StoreEntry(&store_, name));
  }
  worker.started(std::move(std::get<std::unique_ptr<WorkerProcess>>(launched)), std::move(status),
                 std::make_shared<ipc::Channel>(io_, std::move(ends.sender)));
  return std::nullopt;
}

void WorkerRegistry::spawn(const std::shared_ptr<Worker>& worker) {
  const std::string segment =
      "/switchboard-" + std::to_string(::getpid()) + "-" + std::to_string(next_segment_++);
  // Each step takes descriptors or memory; out of either, this worker waits for its next
  // try (with the restart backoff, which also paces this log line) and the supervisor and
  // every other computer carry on.
  if (const auto failure = launch(*worker, segment)) {
    log_error("cannot start a worker", {{"computer", worker->name()}, {"error", *failure}});
    worker->failed_to_start();
    mourn(worker, -1);
    return;
  }
  std::weak_ptr<Worker> weak = worker;
  worker->channel()->start(
      [this, weak](ipc::Frame&& frame) {
        auto alive = weak.lock();
        if (!alive) return;
        try {
          on_frame(alive, std::move(frame));
        } catch (const std::exception& error) {
          // A frame's callbacks answer callers; a defect there fails that answer only.
          log_error("internal error while handling a worker's frame",
                    {{"computer", alive->name()}, {"error", error.what()}});
        }
      },
      [this, weak](const std::string& violation) {
        auto alive = weak.lock();
        // A plain end of the channel is followed by the exit, which the wait below sees.
        if (alive && !violation.empty()) expel(*alive, violation);
      });
  // A large reply starts on its way to the caller while the worker is still sending it
  // (docs/architecture.md, "Large replies").
  worker->channel()->hand_over_large_bodies(
      kArrivingReplyFrom, [this, weak](const ipc::Frame& frame) {
        const auto alive = weak.lock();
        if (!alive || frame.type != ipc::FrameType::kReply) return false;
        const InFlightCall* call = in_flight_->find(frame.call_id, *alive);
        return call && call->reply_may_arrive;
      });
  configure(*worker);
  send_carried(*worker);
  worker->on_exit([this, worker](int wait_status) { on_exit(worker, wait_status); });
}

void WorkerRegistry::configure(Worker& worker) {
  worker.send(worker.configuration(timings_, drain_, worker_buffer_bytes_));
}

// The worker checks each frame against the contract and its own state; the registry acts
// on what it comes to.
void WorkerRegistry::on_frame(const std::shared_ptr<Worker>& worker, ipc::Frame&& frame) {
  auto news = worker->read(std::move(frame), next_call_id_);
  if (auto* violation = std::get_if<worker_news::Violation>(&news))
    return expel(*worker, violation->reason);
  if (std::holds_alternative<worker_news::Greeted>(news)) {
    start_queued();
    return report_when_all_up();
  }
  if (auto* reply = std::get_if<ipc::Reply>(&news)) return on_reply(worker, std::move(*reply));
  if (auto* message = std::get_if<ipc::Message>(&news))
    return on_message(worker, std::move(*message));
  if (auto* session = std::get_if<worker_news::Session>(&news))
    return on_session_news(worker, *session);
}

// Chromium's rule for a less trusted process: a message out of contract ends the sender.
// Its computer reconnects to a fresh worker after the usual backoff.
void WorkerRegistry::expel(Worker& worker, const std::string& reason) {
  if (worker.expelled()) return;
  log_error(
      "worker broke the IPC contract; killing it",
      {{"computer", worker.name()}, {"pid", std::to_string(worker.pid())}, {"reason", reason}});
  worker.stop();
}

void WorkerRegistry::on_session_news(const std::shared_ptr<Worker>& worker,
                                     const worker_news::Session& news) {
  if (news.carried_lost) {
    lose_carried(*worker);
    note_carried_outcome(worker->name(), "redialled");
  }
  if (news.line) write_event(*worker, *news.line);
  if (news.carried_taken_up) {
    release_held_calls(*worker, true);
    note_carried_outcome(worker->name(), "resumed");
  }
}

// The line is the supervisor's, stamped with the computer's current name.
void WorkerRegistry::write_event(const Worker& worker, const ipc::SessionEvent& event) {
  json fields = ipc::event_fields(event);
  fields["computer"] = worker.name();
  audit_.write(ipc::event_name(event), std::move(fields));
}

// Its last frames (its computer's vm_detach above all) are read before it is mourned.
void WorkerRegistry::on_exit(const std::shared_ptr<Worker>& worker, int wait_status) {
  if (!worker->channel() || worker->expelled()) return mourn(worker, wait_status);
  worker->channel()->drain([this, worker, wait_status] { mourn(worker, wait_status); });
}

void WorkerRegistry::mourn(const std::shared_ptr<Worker>& worker, int wait_status) {
  const bool was_retiring = worker->state() == Worker::State::kRetiring;
  audit_lost_sessions(*worker);
  worker->ended();
  // Its computer's calls may have run; they end now, not at their deadlines. A parked
  // session's calls cross with it.
  if (!worker->parked()) fail_in_flight(*worker, ipc::CallStatus::kDisconnected);
  start_queued();  // if it was starting, it made room

  if (was_retiring || shutting_down_ || parking_) {
    worker->exited();
    std::erase(retiring_, worker);
    if (parking_) return maybe_finish_parking();
    return maybe_finish_shutdown();
  }
  if (wait_status >= 0) {
    log_warn("worker exited; restarting it", {{"computer", worker->name()},
                                              {"pid", std::to_string(worker->pid())},
                                              {"exit", base::describe_exit(wait_status)}});
  }
  schedule_respawn(worker);
}

void WorkerRegistry::schedule_respawn(const std::shared_ptr<Worker>& worker) {
  worker->restart_after_backoff(io_, [this, weak = std::weak_ptr<Worker>(worker)] {
    auto alive = weak.lock();
    if (!alive || alive->state() != Worker::State::kRestarting || shutting_down_ || parking_)
      return;
    spawn(alive);
  });
}

// The supervisor wrote the vm_attach of every session still attached, so it writes the
// matching detach of those the worker could not.
void WorkerRegistry::audit_lost_sessions(Worker& worker) {
  bool carried_lost = false;
  const auto lines = worker.lose_sessions(carried_lost);
  if (carried_lost) {
    lose_carried(worker);
    note_carried_outcome(worker.name(), "redialled");
  }
  for (const auto& line : lines) write_event(worker, line);
}

void WorkerRegistry::watch_stalls() {
  stall_timer_.expires_after(timings_.heartbeat);
  stall_timer_.async_wait([this](boost::system::error_code error) {
    if (error || parking_) return;
    std::vector<std::shared_ptr<Worker>> watched = workers_;
    // A removed computer's worker that stalls before it could leave must not linger
    // holding its computer's socket either.
    watched.insert(watched.end(), retiring_.begin(), retiring_.end());
    for (auto& worker : watched) watch_one(*worker);
    watch_stalls();
  });
}

void WorkerRegistry::watch_one(Worker& worker) {
  const std::string pid = std::to_string(worker.pid());
  switch (worker.watch(timings_)) {
    case WorkerHealth::kFine:
      return;
    case WorkerHealth::kNoHello:
      log_error("worker did not say hello in time; killing it",
                {{"computer", worker.name()}, {"pid", pid}});
      return worker.stop();
    case WorkerHealth::kFrameUnfinished:
      return expel(worker, "left a frame unfinished");
    case WorkerHealth::kRecordTorn:
      return expel(worker, "kept its status record torn");
    case WorkerHealth::kSilent:
      log_error("worker silent too long; killing it", {{"computer", worker.name()}, {"pid", pid}});
      return worker.kill();
    case WorkerHealth::kStalled:
      return log_warn("worker stalled; its computer is reported not ready",
                      {{"computer", worker.name()}});
    case WorkerHealth::kRecovered:
      return log_info("worker recovered", {{"computer", worker.name()}});
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
    for (auto& worker : retiring_) worker->kill();
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
