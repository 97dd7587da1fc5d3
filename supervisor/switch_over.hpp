// A switch in place (docs/architecture.md, "Switching"): the supervisor executes the
// `switchboard` file at the path it was started from (a replaced file is an upgrade) in its
// own process, and the computers, the callers and their calls in flight cross to the new
// build without a close, a new handshake or a failed call.
//
// The old process's half is SwitchOver: the new build checks the config first; then the
// listeners stop accepting (new connections wait in their backlogs), the workers park
// their computers' sessions at message boundaries and exit, each caller's connection parks
// between two requests or, once no reply can come any more, with its call in flight; and
// everything is handed to the new program as named descriptors with a state file beside
// them. The new process's half is report_switch, once its workers have taken the sessions
// up.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/spawn.hpp"
#include "base/unique_fd.hpp"
#include "shared/service_notify.hpp"
#include "supervisor/audit/audit_log.hpp"
#include "supervisor/control/control_server.hpp"
#include "supervisor/http/server.hpp"
#include "supervisor/mcp/call_book.hpp"
#include "supervisor/mcp/subscription_book.hpp"
#include "supervisor/mcp/task_book.hpp"
#include "supervisor/metrics/metrics.hpp"
#include "supervisor/metrics/metrics_server.hpp"
#include "supervisor/pods/pod_dialer.hpp"
#include "supervisor/switching/switch_state.hpp"
#include "supervisor/workers/registry.hpp"

namespace sb::supervisor {

// What a switch executes: the file at the path this process was started from, with its
// command line; and, should that file fail to execute, the binary this process runs.
struct ServeProgram {
  std::filesystem::path path;
  base::UniqueFd own;  // O_PATH
  std::vector<std::string> argv;
  std::string config_path;
};

// The process's parts a switch works with.
struct SwitchParts {
  boost::asio::io_context& io;
  const ServeProgram& program;
  HttpServer& http;
  ControlServer& control;
  MetricsServer* metrics_server;  // when metrics_listen is set
  PodDialers& pods;
  WorkerRegistry& workers;
  TaskBook& tasks;
  SubscriptionBook& subscriptions;
  CallBook& calls;
  AuditLog& audit;
  Metrics& metrics;
  const ServiceNotifier& notifier;
};

// How what crosses reaches the next process: by executing it in this one (SIGUSR2,
// `switchboard upgrade`), or through the service manager's store, which hands it to the
// process it starts next (`systemctl restart`: the unit's RestartKillSignal).
enum class Carrier { kExec, kServiceManager };

class SwitchOver {
 public:
  explicit SwitchOver(SwitchParts parts) : parts_(parts), drain_timer_(parts.io) {}

  // Begins a switch, unless one is under way. `requester` (a `switchboard upgrade`
  // connection), when valid, is told how it went: by this process when it does not switch,
  // by the next one when it does. `drain` bounds the wait for each part to reach a point
  // where it can cross.
  void begin(std::chrono::milliseconds drain, base::UniqueFd requester,
             Carrier carrier = Carrier::kExec);
  bool under_way() const { return under_way_; }

 private:
  void on_checked(int wait_status);
  void park();
  void on_workers_parked(ParkedWorkers parked);
  void on_connections_parked();
  void hand_over();
  void hand_to_service_manager(std::vector<NamedDescriptor> descriptors);
  void refuse(const std::string& why);

  SwitchParts parts_;
  bool under_way_ = false;
  Carrier carrier_ = Carrier::kExec;
  std::chrono::milliseconds drain_{0};
  base::UniqueFd requester_;
  std::unique_ptr<base::ChildProcess> check_;
  std::chrono::steady_clock::time_point started_;
  boost::asio::steady_timer drain_timer_;
  std::optional<ParkedWorkers> parked_;
};

// Adds the callers' connections to what crosses while their names fit (see the .cpp).
void carry_callers_within_budget(SwitchState& state, std::vector<NamedDescriptor>& descriptors,
                                 std::vector<NamedDescriptor> callers);

// After a crash, what the service manager kept: each computer's socket and the record its
// worker parked into its file (should the supervisor die, the worker parks its session
// there), paired by computer and generation, become the sessions a switch would have
// carried, with no caller and so no call. Records are taken out of `descriptors`.
SwitchState state_after_crash(std::vector<NamedDescriptor>& descriptors,
                              const std::vector<config::Computer>& computers);

// A computer's socket that was handed over and that nothing takes up (after a crash, its
// record was missing or damaged): its session's one vm_detach, since its vm_attach was
// written before. The computer and generation come from the socket's name; the peer is
// not known any more.
void audit_session_not_taken_up(const std::string& socket_name,
                                const std::vector<config::Computer>& computers, AuditLog& audit);

// The new process's half: once every carried session was taken up or lost, the
// service_restarted audit line, the requester's answer, and the counts for /metrics.
void report_switch(const SwitchState& state, const std::vector<CarriedOutcome>& outcomes,
                   base::UniqueFd requester, AuditLog& audit, Metrics& metrics);

}  // namespace sb::supervisor
