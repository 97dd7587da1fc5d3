#include "supervisor/worker_registry.hpp"

// Boost.Process 1.81 with std::filesystem needs optional first (BUILD-NOTES).
#include <boost/optional.hpp>
// clang-format off
#include <boost/process/v2/process.hpp>
// clang-format on
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ipc/channel.hpp"
#include "shared/log.hpp"
#include "supervisor/audit_log.hpp"

namespace sb::supervisor {

namespace bp = boost::process::v2;
using json = nlohmann::json;
using namespace std::chrono_literals;

namespace {

constexpr auto kBackstopGrace = 2s;        // a worker's own timeout fires first
constexpr auto kHeartbeatStaleAfter = 3s;  // then the computer is reported not ready
constexpr auto kStallKillAfter = 30s;      // then the worker is killed and respawned
constexpr auto kFirstBackoff = 100ms;
constexpr auto kMaxBackoff = 5s;
constexpr auto kBackoffResetAfter = 60s;
constexpr auto kShutdownGrace = 5s;

// Puts the worker's end of the socket pair on descriptor 3 and marks every other
// descriptor above stderr close-on-exec, so a worker never holds the listener, a caller's
// connection or another computer's socket. Boost.Process's own closing step has an
// off-by-one in 1.81 (BUILD-NOTES), so it is not relied on.
struct ChannelOnFd3 {
  int child_end;

  template <typename Launcher>
  boost::system::error_code on_exec_setup(Launcher& launcher, const std::filesystem::path&,
                                          const char* const*&) {
    if (child_end == 3) {
      ::fcntl(3, F_SETFD, 0);
    } else if (::dup2(child_end, 3) < 0) {
      return boost::system::error_code(errno, boost::system::system_category());
    }
    // A worker has nothing to say on stdout, which may be the audit stream.
    ::dup2(STDERR_FILENO, STDOUT_FILENO);
    ::close_range(4, ~0U, CLOSE_RANGE_CLOEXEC);
    launcher.fd_whitelist.push_back(3);
    return {};
  }
};

std::int64_t resident_kib(int pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atoll(line.c_str() + 6);
  }
  return 0;
}

}  // namespace

struct InFlightCall {
  CallCallback done;
  MessageCallback on_message;
  std::chrono::milliseconds timeout{0};
  std::chrono::steady_clock::time_point last_moment;  // start + max_total
  std::unique_ptr<boost::asio::steady_timer> backstop;
};

struct Worker {
  enum class State { kStarting, kRunning, kRestarting, kRetiring, kExited };

  std::string name;
  Verifier verifier;
  int max_inflight = config::kDefaultMaxInflight;
  bool sole_client = false;
  std::uint64_t generation = 0;  // follows the verifier across renames and respawns
  State state = State::kStarting;
  std::unique_ptr<bp::process> process;
  int pid = 0;
  std::shared_ptr<ipc::Channel> channel;
  std::unique_ptr<ipc::StatusReader> status;
  std::map<std::uint64_t, InFlightCall> in_flight;
  int restarts = 0;
  std::chrono::milliseconds backoff = kFirstBackoff;
  std::chrono::steady_clock::time_point started_at;
  std::unique_ptr<boost::asio::steady_timer> respawn_timer;
  bool stall_reported = false;

  bool has_process() const {
    return state == State::kStarting || state == State::kRunning || state == State::kRetiring;
  }
  bool heartbeat_fresh() const {
    return status &&
           status->heartbeat_age_ms() <= std::chrono::milliseconds(kHeartbeatStaleAfter).count();
  }
};

WorkerRegistry::WorkerRegistry(boost::asio::io_context& io, std::filesystem::path worker_binary,
                               AuditLog& audit)
    : io_(io), worker_binary_(std::move(worker_binary)), audit_(audit), stall_timer_(io) {}

WorkerRegistry::~WorkerRegistry() {
  // Destroying a Boost.Process object kills a child still running; say so plainly.
  for (auto& worker : workers_) {
    if (worker->channel) worker->channel->close();
  }
}

void WorkerRegistry::start(const std::vector<config::Computer>& computers,
                           std::function<void()> all_up) {
  all_up_ = std::move(all_up);
  for (const auto& computer : computers) {
    auto worker = std::make_shared<Worker>();
    worker->name = computer.name;
    worker->verifier = computer.secret;
    worker->max_inflight = computer.max_inflight;
    worker->sole_client = computer.sole_client;
    workers_.push_back(worker);
    spawn(worker);
  }
  watch_stalls();
  report_when_all_up();
}

void WorkerRegistry::report_when_all_up() {
  if (!all_up_ || !all_started()) return;
  auto all_up = std::move(all_up_);
  all_up_ = nullptr;
  all_up();
}

// The socket pair, the status board and the process of a worker; what failed, if any.
// Failures are answers, not exceptions carried out of here: Boost's exception types trip
// UBSan's vptr check when inspected, and a spawn that fails must cost nothing but a log line.
std::optional<std::string> WorkerRegistry::launch(Worker& worker, const std::string& segment,
                                                  ipc::UniqueFd& parent_end) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) != 0)
    return std::string("socketpair: ") + std::strerror(errno);
  parent_end = ipc::UniqueFd(fds[0]);
  const ipc::UniqueFd child_end(fds[1]);
  try {
    worker.status = std::make_unique<ipc::StatusReader>(segment);
  } catch (...) {
    return std::string("status board: ") + std::strerror(errno);
  }
  boost::system::error_code launch_error;
  auto process = bp::default_process_launcher()(
      io_.get_executor(), launch_error, worker_binary_,
      std::vector<std::string>{"--channel-fd", "3", "--status-segment", segment},
      ChannelOnFd3{child_end.get()});
  if (launch_error) return "launching: " + launch_error.message();
  worker.process = std::make_unique<bp::process>(std::move(process));
  return std::nullopt;
}

void WorkerRegistry::spawn(const std::shared_ptr<Worker>& worker) {
  const std::string segment =
      "/switchboard-" + std::to_string(::getpid()) + "-" + std::to_string(next_segment_++);
  worker->started_at = std::chrono::steady_clock::now();
  worker->stall_reported = false;
  // Each step takes descriptors or memory; out of either, this worker waits for its next
  // try (with the restart backoff, which also paces this log line) and the supervisor and
  // every other computer carry on.
  ipc::UniqueFd parent_end;
  const auto failure = launch(*worker, segment, parent_end);
  if (failure) {
    log_error("cannot start a worker", {{"computer", worker->name}, {"error", *failure}});
    worker->status.reset();
    worker->state = Worker::State::kExited;
    on_exit(worker, -1);
    return;
  }
  worker->pid = worker->process->id();
  worker->state = Worker::State::kStarting;
  worker->channel = std::make_shared<ipc::Channel>(io_, std::move(parent_end));
  std::weak_ptr<Worker> weak = worker;
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
      [] { /* the exit is seen by the process wait below */ });
  configure(*worker);
  worker->process->async_wait(
      [this, worker](boost::system::error_code, int exit_code) { on_exit(worker, exit_code); });
}

void WorkerRegistry::configure(Worker& worker) {
  if (!worker.channel) return;
  worker.channel->send(ipc::Frame{.type = ipc::FrameType::kConfigure,
                                  .meta = json{{"name", worker.name},
                                               {"max_inflight", worker.max_inflight},
                                               {"sole_client", worker.sole_client}}
                                              .dump()});
}

void WorkerRegistry::on_frame(const std::shared_ptr<Worker>& worker, ipc::Frame&& frame) {
  switch (frame.type) {
    case ipc::FrameType::kHello:
      if (worker->state == Worker::State::kStarting) worker->state = Worker::State::kRunning;
      worker->status->unlink();  // both sides have it mapped; the name is no longer needed
      return report_when_all_up();
    case ipc::FrameType::kReply:
      return on_reply(worker, std::move(frame));
    case ipc::FrameType::kMessage:
      return on_message(worker, std::move(frame));
    case ipc::FrameType::kEvent:
      return audit_.write_from_worker(frame.body);
    default:
      log_warn("unexpected frame from a worker",
               {{"computer", worker->name}, {"type", std::to_string(int(frame.type))}});
  }
}

// Tells the worker a reply has left the supervisor (kDelivered) when its last holder lets
// go of it; a worker that is gone by then needs telling nothing.
struct DeliveryNotice {
  std::weak_ptr<ipc::Channel> channel;
  std::uint64_t call_id = 0;
  ~DeliveryNotice() {
    const auto open = channel.lock();
    if (open && open->is_open())
      open->send(ipc::Frame{.type = ipc::FrameType::kDelivered, .call_id = call_id});
  }
};

void WorkerRegistry::on_reply(const std::shared_ptr<Worker>& worker, ipc::Frame&& frame) {
  auto slot = std::make_shared<DeliveryNotice>(worker->channel, frame.call_id);
  const auto found = worker->in_flight.find(frame.call_id);
  if (found == worker->in_flight.end()) return;  // cancelled or past its backstop
  const auto outcome = ipc::decode_outcome(frame.meta);
  CallCallback done = std::move(found->second.done);
  worker->in_flight.erase(found);
  if (!outcome) {
    log_warn("malformed reply from a worker", {{"computer", worker->name}});
    return done(CallResult{ipc::CallStatus::kDisconnected, 0, {}});
  }
  done(CallResult{outcome->status, outcome->response_bytes, std::move(frame.body), outcome->kind,
                  outcome->error_code, std::move(slot)});
}

void WorkerRegistry::on_message(const std::shared_ptr<Worker>& worker, ipc::Frame&& frame) {
  if (frame.call_id == 0) {
    if (task_status_) task_status_(worker->name, std::move(frame.body));
    return;
  }
  const auto found = worker->in_flight.find(frame.call_id);
  if (found == worker->in_flight.end()) return;  // ended meanwhile
  const auto meta = ipc::decode_message_meta(frame.meta);
  if (!meta) {
    log_warn("malformed message from a worker", {{"computer", worker->name}});
    return;
  }
  // The worker restarted its own deadline for this progress; the backstop follows, whether
  // or not the caller takes the message.
  if (meta->kind == ipc::MessageKind::kProgress) arm_backstop(worker, frame.call_id);
  if (found->second.on_message) found->second.on_message(*meta, std::move(frame.body));
}

void WorkerRegistry::fail_in_flight(Worker& worker, ipc::CallStatus status) {
  auto calls = std::move(worker.in_flight);
  worker.in_flight.clear();
  for (auto& [id, call] : calls) call.done(CallResult{status, 0, {}});
}

void WorkerRegistry::on_exit(const std::shared_ptr<Worker>& worker, int exit_code) {
  const bool was_retiring = worker->state == Worker::State::kRetiring;
  audit_lost_session(*worker);
  if (worker->channel) worker->channel->close();
  worker->channel.reset();
  worker->process.reset();
  worker->status.reset();
  // Its computer's calls may have run; they end now, not at their deadlines.
  fail_in_flight(*worker, ipc::CallStatus::kDisconnected);

  if (was_retiring || shutting_down_) {
    worker->state = Worker::State::kExited;
    std::erase(retiring_, worker);
    return maybe_finish_shutdown();
  }
  log_warn("worker exited; restarting it", {{"computer", worker->name},
                                            {"pid", std::to_string(worker->pid)},
                                            {"exit_code", std::to_string(exit_code)}});
  worker->state = Worker::State::kRestarting;
  ++worker->restarts;
  if (std::chrono::steady_clock::now() - worker->started_at >= kBackoffResetAfter)
    worker->backoff = kFirstBackoff;
  worker->respawn_timer = std::make_unique<boost::asio::steady_timer>(io_, worker->backoff);
  worker->backoff = std::min<std::chrono::milliseconds>(worker->backoff * 2, kMaxBackoff);
  worker->respawn_timer->async_wait(
      [this, weak = std::weak_ptr<Worker>(worker)](boost::system::error_code error) {
        auto alive = weak.lock();
        if (error || !alive || alive->state != Worker::State::kRestarting || shutting_down_) return;
        spawn(alive);
      });
}

// A worker that dies cannot write its computer's vm_detach line; the board still shows
// the session it held, so the supervisor writes the line for it (unless the worker had
// already ended the session and cleared the board).
void WorkerRegistry::audit_lost_session(const Worker& worker) {
  if (!worker.status) return;
  const auto status = worker.status->read();
  if (status.state == ipc::ComputerState::kIdle) return;
  const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  audit_.write("vm_detach", {{"computer", worker.name},
                             {"peer", status.peer},
                             {"generation", worker.generation},
                             {"code", 1006},
                             {"reason", "the computer's worker exited"},
                             {"attached_for_secs",
                              std::max<std::int64_t>(0, (now_ms - status.attached_at_ms) / 1000)}});
}

void WorkerRegistry::watch_stalls() {
  stall_timer_.expires_after(1s);
  stall_timer_.async_wait([this](boost::system::error_code error) {
    if (error) return;
    std::vector<std::shared_ptr<Worker>> watched = workers_;
    // A removed computer's worker that stalls before it could leave must not linger
    // holding its computer's socket either.
    watched.insert(watched.end(), retiring_.begin(), retiring_.end());
    for (auto& worker : watched) {
      if (worker->state != Worker::State::kRunning && worker->state != Worker::State::kRetiring)
        continue;
      if (!worker->status) continue;
      const auto age = std::chrono::milliseconds(worker->status->heartbeat_age_ms());
      if (age > kStallKillAfter) {
        log_error("worker silent too long; killing it",
                  {{"computer", worker->name}, {"pid", std::to_string(worker->pid)}});
        ::kill(worker->pid, SIGKILL);
      } else if (age > kHeartbeatStaleAfter && !worker->stall_reported) {
        worker->stall_reported = true;
        log_warn("worker stalled; its computer is reported not ready",
                 {{"computer", worker->name}});
      } else if (age <= kHeartbeatStaleAfter && worker->stall_reported) {
        worker->stall_reported = false;
        log_info("worker recovered", {{"computer", worker->name}});
      }
    }
    watch_stalls();
  });
}

void WorkerRegistry::apply(const std::vector<config::Computer>& computers) {
  std::vector<std::shared_ptr<Worker>> next;
  std::vector<std::shared_ptr<Worker>> previous = std::move(workers_);
  workers_.clear();
  for (const auto& computer : computers) {
    auto match = std::find_if(previous.begin(), previous.end(), [&](const auto& worker) {
      return worker && worker->verifier == computer.secret;
    });
    if (match == previous.end()) {
      auto worker = std::make_shared<Worker>();
      worker->name = computer.name;
      worker->verifier = computer.secret;
      worker->max_inflight = computer.max_inflight;
      worker->sole_client = computer.sole_client;
      next.push_back(worker);
      continue;
    }
    auto worker = std::move(*match);
    if (worker->name != computer.name) {
      const auto status =
          worker->status && worker->has_process() ? worker->status->read() : ipc::ComputerStatus{};
      audit_.write("computer_renamed", {{"from", worker->name},
                                        {"to", computer.name},
                                        {"attached", status.state != ipc::ComputerState::kIdle},
                                        {"generation", worker->generation}});
      worker->name = computer.name;
    }
    worker->max_inflight = computer.max_inflight;
    worker->sole_client = computer.sole_client;
    configure(*worker);
    next.push_back(std::move(worker));
  }
  workers_ = next;
  // Written here rather than by the worker so that every line of a reload precedes its
  // config_reloaded line.
  for (auto& removed : previous) {
    if (!removed) continue;
    const auto status =
        removed->status && removed->has_process() ? removed->status->read() : ipc::ComputerStatus{};
    if (status.state != ipc::ComputerState::kIdle) {
      audit_.write("vm_revoked", {{"computer", removed->name},
                                  {"peer", status.peer},
                                  {"generation", removed->generation}});
    }
    retire(removed, /*revoke=*/true);
  }
  for (auto& worker : workers_) {
    if (!worker->process && worker->state == Worker::State::kStarting) spawn(worker);
  }
}

void WorkerRegistry::retire(const std::shared_ptr<Worker>& worker, bool revoke) {
  if (!worker->has_process()) {
    worker->state = Worker::State::kExited;  // restarting: simply never respawned
    return;
  }
  worker->state = Worker::State::kRetiring;
  retiring_.push_back(worker);
  worker->channel->send(
      ipc::Frame{.type = revoke ? ipc::FrameType::kRevoke : ipc::FrameType::kShutdown});
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
    for (auto& worker : retiring_) ::kill(worker->pid, SIGKILL);
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

bool WorkerRegistry::knows_secret(const Verifier& presented) const {
  std::vector<Verifier> verifiers;
  for (const auto& worker : workers_) verifiers.push_back(worker->verifier);
  return find_verifier(verifiers, presented).has_value();
}

HandOver WorkerRegistry::hand_over(const Verifier& presented, ipc::UniqueFd& socket,
                                   std::string upgrade_bytes, const std::string& peer) {
  std::vector<Verifier> verifiers;
  for (const auto& worker : workers_) verifiers.push_back(worker->verifier);
  const auto index = find_verifier(verifiers, presented);
  if (!index) return HandOver::kRevoked;
  Worker& worker = *workers_[*index];
  if (!worker.channel || !worker.channel->is_open()) return HandOver::kWorkerUnavailable;
  ++worker.generation;
  worker.channel->send(ipc::Frame{.type = ipc::FrameType::kAttach,
                                  .meta = json{{"peer", peer},
                                               {"generation", worker.generation},
                                               {"max_inflight", worker.max_inflight}}
                                              .dump(),
                                  .body = std::move(upgrade_bytes),
                                  .fd = std::move(socket)});
  return HandOver::kDone;
}

std::shared_ptr<Worker> WorkerRegistry::find(std::string_view computer) const {
  for (const auto& worker : workers_) {
    if (worker->name == computer) return worker;
  }
  return nullptr;
}

std::uint64_t WorkerRegistry::forward(std::string_view computer, CallRequest request,
                                      CallCallback done) {
  const auto worker = find(computer);
  const auto current = view(computer);
  if (!worker || !current || !current->ready || !worker->channel) {
    done(CallResult{ipc::CallStatus::kNotAttached, 0, {}});
    return 0;
  }
  const std::uint64_t call_id = next_call_id_++;
  const auto now = std::chrono::steady_clock::now();
  InFlightCall call{.done = std::move(done),
                    .on_message = std::move(request.on_message),
                    .timeout = request.timeout,
                    .last_moment = now + request.max_total,
                    .backstop = std::make_unique<boost::asio::steady_timer>(io_)};
  const bool stream = static_cast<bool>(call.on_message);
  worker->in_flight.emplace(call_id, std::move(call));
  arm_backstop(worker, call_id);
  worker->channel->send(ipc::Frame{.type = ipc::FrameType::kCall,
                                   .call_id = call_id,
                                   .meta = json{{"caller", request.caller},
                                                {"caller_cap", request.caller_cap},
                                                {"timeout_ms", request.timeout.count()},
                                                {"max_total_ms", request.max_total.count()},
                                                {"method", request.method},
                                                {"stream", stream}}
                                               .dump(),
                                   .body = std::move(request.params_json)});
  return call_id;
}

// A stalled worker costs its own callers a timeout and nobody else anything. The backstop
// fires a grace period after the worker's own deadline would have.
void WorkerRegistry::arm_backstop(const std::shared_ptr<Worker>& worker, std::uint64_t call_id) {
  InFlightCall& call = worker->in_flight.at(call_id);
  const auto at = std::min(std::chrono::steady_clock::now() + call.timeout, call.last_moment);
  call.backstop->expires_at(at + kBackstopGrace);
  call.backstop->async_wait(
      [this, weak = std::weak_ptr<Worker>(worker), call_id](boost::system::error_code error) {
        auto alive = weak.lock();
        if (error || !alive) return;
        const auto found = alive->in_flight.find(call_id);
        if (found == alive->in_flight.end()) return;
        CallCallback late = std::move(found->second.done);
        alive->in_flight.erase(found);
        if (alive->channel) {
          alive->channel->send(ipc::Frame{.type = ipc::FrameType::kCancel,
                                          .call_id = call_id,
                                          .meta = json{{"reason", "timed out"}}.dump()});
        }
        late(CallResult{ipc::CallStatus::kTimeout, 0, {}});
      });
}

std::shared_ptr<Worker> WorkerRegistry::owner_of(std::uint64_t call_id) const {
  for (const auto* list : {&workers_, &retiring_}) {
    for (const auto& worker : *list) {
      if (worker->in_flight.contains(call_id)) return worker;
    }
  }
  return nullptr;
}

void WorkerRegistry::cancel(std::uint64_t call_id, const std::string& reason) {
  const auto worker = owner_of(call_id);
  if (!worker) return;
  worker->in_flight.erase(call_id);
  if (worker->channel) {
    worker->channel->send(ipc::Frame{.type = ipc::FrameType::kCancel,
                                     .call_id = call_id,
                                     .meta = json{{"reason", reason}}.dump()});
  }
}

bool WorkerRegistry::deliver(std::uint64_t call_id, const ipc::MessageMeta& meta,
                             std::string body) {
  const auto worker = owner_of(call_id);
  if (!worker) return false;
  auto& on_message = worker->in_flight.at(call_id).on_message;
  if (!on_message) return false;
  on_message(meta, std::move(body));
  return true;
}

void WorkerRegistry::answer(std::uint64_t call_id, std::uint64_t key,
                            std::string response_without_id) {
  const auto worker = owner_of(call_id);
  if (!worker || !worker->channel) return;
  worker->channel->send(ipc::Frame{.type = ipc::FrameType::kAnswer,
                                   .call_id = call_id,
                                   .meta = json{{"key", key}}.dump(),
                                   .body = std::move(response_without_id)});
}

std::optional<ComputerView> WorkerRegistry::view(std::string_view computer) const {
  const auto worker = find(computer);
  if (!worker) return std::nullopt;
  ComputerView view{.name = worker->name};
  if (worker->state != Worker::State::kRunning || !worker->status) return view;
  view.status = worker->status->read();
  view.attached = view.status.state != ipc::ComputerState::kIdle;
  view.ready = view.status.state == ipc::ComputerState::kReady && worker->heartbeat_fresh();
  return view;
}

std::vector<std::string> WorkerRegistry::names() const {
  std::vector<std::string> names;
  for (const auto& worker : workers_) names.push_back(worker->name);
  return names;
}

bool WorkerRegistry::any_ready() const {
  for (const auto& worker : workers_) {
    const auto current = view(worker->name);
    if (current && current->ready) return true;
  }
  return false;
}

bool WorkerRegistry::all_started() const {
  for (const auto& worker : workers_) {
    if (worker->state != Worker::State::kRunning) return false;
  }
  return true;
}

std::vector<WorkerRow> WorkerRegistry::rows() const {
  std::vector<WorkerRow> rows;
  for (const auto& worker : workers_) {
    WorkerRow row{.computer = worker->name,
                  .pid = worker->has_process() ? worker->pid : 0,
                  .restarts = worker->restarts};
    if (worker->state == Worker::State::kRestarting) {
      row.state = "restarting";
    } else if (worker->state != Worker::State::kRunning || !worker->status) {
      row.state = "starting";
    } else {
      const auto status = worker->status->read();
      row.in_flight = status.in_flight;
      row.max_in_flight = status.max_in_flight ? status.max_in_flight
                                               : static_cast<std::uint32_t>(worker->max_inflight);
      if (status.state != ipc::ComputerState::kIdle) {
        const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count();
        row.attached_for_secs = (now_ms - status.attached_at_ms) / 1000;
      }
      if (!worker->heartbeat_fresh()) {
        row.state = "stalled";
      } else {
        row.state = status.state == ipc::ComputerState::kReady         ? "ready"
                    : status.state == ipc::ComputerState::kHandshaking ? "handshaking"
                                                                       : "idle";
      }
    }
    if (row.pid) row.resident_kib = resident_kib(row.pid);
    rows.push_back(row);
  }
  return rows;
}

}  // namespace sb::supervisor
