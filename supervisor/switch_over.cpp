#include "supervisor/switch_over.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "ipc/frame.hpp"
#include "ipc/parked_session.hpp"
#include "shared/log.hpp"
#include "shared/verifier.hpp"
#include "supervisor/switching/descriptors.hpp"

namespace sb::supervisor {
namespace {

using json = nlohmann::json;

constexpr auto kCheckTimeout = std::chrono::seconds(30);

// A requester's answer is one line, written at once: it is small and the requester waits.
void answer(base::UniqueFd requester, const json& body) {
  if (!requester.valid()) return;
  const std::string line = body.dump() + "\n";
  (void)::send(requester.get(), line.data(), line.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
}

std::int64_t ms_between(std::chrono::steady_clock::time_point from,
                        std::chrono::steady_clock::time_point to) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(to - from).count();
}

}  // namespace

void SwitchOver::begin(std::chrono::milliseconds drain, base::UniqueFd requester, Carrier carrier) {
  if (under_way_) {
    return answer(std::move(requester),
                  json{{"switched", false}, {"error", "a switch is under way already"}});
  }
  under_way_ = true;
  drain_ = drain;
  carrier_ = carrier;
  requester_ = std::move(requester);
  // The service manager is stopping this process and starts whatever is installed: there
  // is nothing to refuse.
  if (carrier == Carrier::kServiceManager) return park();
  // The new build reads the config first: a file that does not execute, or a config it
  // refuses, costs a log line and nothing else.
  auto spawned = base::spawn(base::SpawnRequest{
      .program = parts_.program.path,
      .args = {"check", "-c", parts_.program.config_path},
      .descriptors = {{STDERR_FILENO, STDOUT_FILENO}},
  });
  if (auto* failure = std::get_if<std::string>(&spawned))
    return refuse("the new program does not start: " + *failure);
  check_ =
      std::make_unique<base::ChildProcess>(parts_.io, std::move(std::get<base::Spawned>(spawned)));
  check_->async_wait([this](int wait_status) { on_checked(wait_status); });
  // A check that hangs is a new build that does not work: killed, it refuses the switch.
  drain_timer_.expires_after(kCheckTimeout);
  drain_timer_.async_wait([this](const boost::system::error_code& error) {
    if (!error && check_) check_->kill();
  });
}

void SwitchOver::on_checked(int wait_status) {
  drain_timer_.cancel();
  check_.reset();
  if (wait_status != 0) {
    return refuse("`" + parts_.program.path.string() + " check` failed (" +
                  base::describe_exit(wait_status) + "); see its output above");
  }
  park();
}

void SwitchOver::refuse(const std::string& why) {
  log_error("switch refused; carrying on as before", {{"error", why}});
  under_way_ = false;
  answer(std::move(requester_), json{{"switched", false}, {"error", why}});
}

void SwitchOver::park() {
  started_ = std::chrono::steady_clock::now();
  log_info("switching in place", {{"program", parts_.program.path.string()},
                                  {"drain_secs", std::to_string(drain_.count() / 1000)}});
  parts_.notifier.reloading();
  parts_.http.stop_accepting();
  // Pod sockets are dialled again at once by the next process (docs/protocol.md, "Pod
  // sockets"); their calls in flight are abandoned while the workers can still cancel them.
  parts_.pods.stop();
  parts_.http.park_connections([this] { on_connections_parked(); });
  parts_.workers.park(drain_,
                      [this](ParkedWorkers parked) { on_workers_parked(std::move(parked)); });
}

// No reply can come any more: callers waiting for one may park now. Each connection has
// the drain from here to reach a point between two writes; one computer slow to park
// never costs the callers of the others theirs.
void SwitchOver::on_workers_parked(ParkedWorkers parked) {
  parked_ = std::move(parked);
  parts_.http.let_calls_park();
  drain_timer_.expires_after(drain_);
  drain_timer_.async_wait([this](const boost::system::error_code& error) {
    if (!error) parts_.http.give_up_parking();
  });
}

void SwitchOver::on_connections_parked() {
  drain_timer_.cancel();
  // Out of the handler that reported the last connection: nothing of it runs after the exec.
  boost::asio::post(parts_.io, [this] { hand_over(); });
}

void SwitchOver::hand_over() {
  ParkedWorkers& parked = *parked_;
  SwitchState state{.build = std::string(ipc::build_id()),
                    .started = started_,
                    .switches = parts_.metrics.switches() + 1,
                    .sessions_resumed = parts_.metrics.sessions_resumed(),
                    .next_call_id = parked.next_call_id,
                    .generations = std::move(parked.generations),
                    .sessions = std::move(parked.sessions),
                    .lost = std::move(parked.lost),
                    .connections = parts_.http.take_parked_connections(),
                    .tasks = parts_.tasks.entries(),
                    .routes = parts_.calls.routes(),
                    .next_routed = parts_.calls.next_routed(),
                    .subscriptions = parts_.subscriptions.entries()};
  std::vector<NamedDescriptor> descriptors = std::move(parked.sockets);
  descriptors.push_back({std::string(kHttpListenerName), parts_.http.release_listener()});
  descriptors.push_back({std::string(kControlListenerName), parts_.control.release_listener()});
  if (parts_.metrics_server)
    descriptors.push_back(
        {std::string(kMetricsListenerName), parts_.metrics_server->release_listener()});
  if (requester_.valid()) {
    state.requester = kRequesterName;
    descriptors.push_back({std::string(kRequesterName), std::move(requester_)});
  }
  carry_callers_within_budget(state, descriptors, parts_.http.take_parked_sockets());
  std::string why;
  base::UniqueFd state_file = memory_file("switchboard-state", encode(state), why);
  if (state_file.valid()) descriptors.push_back({std::string(kStateName), std::move(state_file)});
  if (carrier_ == Carrier::kServiceManager) return hand_to_service_manager(std::move(descriptors));
  log_info("handing over to the new program",
           {{"sessions", std::to_string(state.sessions.size())},
            {"connections", std::to_string(state.connections.size())},
            {"parked_ms", std::to_string(ms_between(started_, std::chrono::steady_clock::now()))}});
  parts_.audit.stop();  // every line so far is on disk before the exec
  const std::string failure = exec_with_descriptors(
      {{.path = parts_.program.path}, {.path = "/proc/self/exe", .fd = parts_.program.own.get()}},
      parts_.program.argv, std::move(descriptors));
  // Nothing is where this process had it any more: all it can do is end, and let its
  // service manager start it again.
  log_error("switch failed: no program could be executed", {{"error", failure}});
  std::_Exit(70);
}

// Whatever the store does not hold yet goes in (the state, each caller's connection); the
// listeners and computers' sockets are there since they were made. Then this process ends
// and the service manager starts the next with all of them.
void SwitchOver::hand_to_service_manager(std::vector<NamedDescriptor> descriptors) {
  for (const auto& descriptor : descriptors) {
    if (descriptor.name == kStateName || descriptor.name.starts_with(kCallerPrefix))
      parts_.notifier.store(descriptor.name, descriptor.fd.get());
  }
  parts_.notifier.barrier(std::chrono::seconds(5));
  log_info("handed over to the service manager; exiting for the restart");
  parts_.audit.stop();
  std::_Exit(0);
}

// A record file as a worker leaves it (worker/worker_app.cpp): its size, then the record.
std::optional<std::string> record_in_file(int fd) {
  std::string why;
  auto bytes = read_memory_file(fd, sizeof(std::uint64_t) + ipc::kMaxParkedSessionBytes, why);
  std::uint64_t size = 0;
  if (!bytes || bytes->size() < sizeof size) return std::nullopt;
  std::memcpy(&size, bytes->data(), sizeof size);
  if (size != bytes->size() - sizeof size) return std::nullopt;
  return bytes->substr(sizeof size);
}

SwitchState state_after_crash(std::vector<NamedDescriptor>& descriptors,
                              const std::vector<config::Computer>& computers) {
  SwitchState state{.build = "unknown", .started = std::chrono::steady_clock::now()};
  std::map<std::string, std::string> records;  // by descriptor name
  std::erase_if(descriptors, [&](NamedDescriptor& descriptor) {
    if (!descriptor.name.starts_with(kRecordPrefix)) return false;
    if (auto bytes = record_in_file(descriptor.fd.get())) records[descriptor.name] = *bytes;
    return true;
  });
  for (const auto& computer : computers) {
    const auto bytes = records.find(record_file_name(computer.name));
    if (bytes == records.end()) continue;
    std::string why;
    const auto record = ipc::decode_parked_session(bytes->second, why);
    if (!record) continue;
    const std::string socket = stored_socket_name(computer.name, record->generation);
    const bool kept =
        std::any_of(descriptors.begin(), descriptors.end(),
                    [&](const auto& descriptor) { return descriptor.name == socket; });
    if (!kept) continue;
    const std::string verifier = render_verifier(computer.secret);
    state.sessions.push_back(CarriedSession{.verifier = verifier,
                                            .computer = computer.name,
                                            .generation = record->generation,
                                            .peer = record->peer,
                                            .attached_at_ms = record->attached_at_ms,
                                            .socket = socket,
                                            .record = bytes->second});
    state.generations.push_back({.verifier = verifier, .generation = record->generation});
  }
  return state;
}

// Every name crosses in one environment variable (descriptors.hpp, kMaxNamesBytes): the
// callers' connections go in while their names fit, after the computers' sockets; one
// beyond is dropped, as a connection a switch could not wait for (thousands of callers).
void carry_callers_within_budget(SwitchState& state, std::vector<NamedDescriptor>& descriptors,
                                 std::vector<NamedDescriptor> callers) {
  std::size_t used = kStateName.size() + 1;
  for (const auto& descriptor : descriptors) used += descriptor.name.size() + 1;
  std::set<std::string> carried;
  for (auto& caller : callers) {
    used += caller.name.size() + 1;
    if (used > kMaxNamesBytes) {
      ::shutdown(caller.fd.get(), SHUT_RDWR);
      continue;
    }
    carried.insert(caller.name);
    descriptors.push_back(std::move(caller));
  }
  const auto dropped = std::erase_if(state.connections, [&](const CarriedConnection& connection) {
    return !carried.contains(connection.socket);
  });
  if (dropped > 0) {
    log_warn("callers' connections dropped at a switch: more than one environment can name",
             {{"dropped", std::to_string(dropped)}});
  }
}

void audit_session_not_taken_up(const std::string& socket_name,
                                const std::vector<config::Computer>& computers, AuditLog& audit) {
  for (const auto& computer : computers) {
    const std::string prefix = std::string(kSocketPrefix) + computer_key(computer.name) + "-";
    if (!socket_name.starts_with(prefix)) continue;
    std::uint64_t generation = 0;
    const std::string_view digits = std::string_view(socket_name).substr(prefix.size());
    std::from_chars(digits.data(), digits.data() + digits.size(), generation);
    audit.write("vm_detach", {{"computer", computer.name},
                              {"peer", ""},
                              {"generation", generation},
                              {"code", 1006},
                              {"reason", "the session could not be taken up after a crash"},
                              {"attached_for_secs", 0}});
    return;
  }
}

void report_switch(const SwitchState& state, const std::vector<CarriedOutcome>& outcomes,
                   base::UniqueFd requester, AuditLog& audit, Metrics& metrics) {
  std::uint64_t resumed = 0;
  json computers = json::array();
  for (const auto& outcome : outcomes) {
    resumed += outcome.outcome == "resumed";
    computers.push_back({{"computer", outcome.computer}, {"outcome", outcome.outcome}});
  }
  for (const auto& lost : state.lost) {
    computers.push_back({{"computer", lost.computer}, {"outcome", "redialled"}, {"why", lost.why}});
  }
  const std::uint64_t redialled = computers.size() - resumed;
  const auto pause_ms = ms_between(state.started, std::chrono::steady_clock::now());
  metrics.switched(state.switches, state.sessions_resumed + resumed);
  audit.write("service_restarted", {{"old_build", state.build},
                                    {"new_build", std::string(ipc::build_id())},
                                    {"resumed", resumed},
                                    {"redialled", redialled},
                                    {"pause_ms", pause_ms}});
  log_info("switch complete", {{"resumed", std::to_string(resumed)},
                               {"redialled", std::to_string(redialled)},
                               {"pause_ms", std::to_string(pause_ms)}});
  // Whoever ran `upgrade` may look for the line as soon as it has the answer.
  audit.flush();
  answer(std::move(requester), json{{"switched", true},
                                    {"old_build", state.build},
                                    {"new_build", std::string(ipc::build_id())},
                                    {"pause_ms", pause_ms},
                                    {"computers", std::move(computers)}});
}

}  // namespace sb::supervisor
