// `switchboard serve`: wiring the supervisor together, signals, reload and shutdown.
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <set>
#include <stdexcept>

#include "base/asio_names.hpp"
#include "base/heap_trim.hpp"
#include "base/unix_time.hpp"
#include "shared/http_proxy.hpp"
#include "shared/log.hpp"
#include "shared/service_notify.hpp"
#include "shared/timings.hpp"
#include "shared/tls_client.hpp"
#include "supervisor/audit/audit_log.hpp"
#include "supervisor/bounds/exhaustion.hpp"
#include "supervisor/control/control_server.hpp"
#include "supervisor/control/workers_table.hpp"
#include "supervisor/http/server.hpp"
#include "supervisor/mcp/call_book.hpp"
#include "supervisor/mcp/handler.hpp"
#include "supervisor/mcp/input_book.hpp"
#include "supervisor/mcp/stream_board.hpp"
#include "supervisor/mcp/subscription_book.hpp"
#include "supervisor/mcp/subscriptions.hpp"
#include "supervisor/mcp/task_book.hpp"
#include "supervisor/mcp/tool_book.hpp"
#include "supervisor/metrics/exposition.hpp"
#include "supervisor/metrics/metrics.hpp"
#include "supervisor/metrics/metrics_server.hpp"
#include "supervisor/outbound/http_client.hpp"
#include "supervisor/pods/pod_dialer.hpp"
#include "supervisor/routes/routes.hpp"
#include "supervisor/routes/state.hpp"
#include "supervisor/serve.hpp"
#include "supervisor/switch_over.hpp"
#include "supervisor/switching/descriptors.hpp"
#include "supervisor/telemetry/export_headers.hpp"

namespace sb::supervisor {
namespace {

using namespace sb::asio_names;
using namespace std::chrono_literals;

// Long enough for the -32004 answers of a shutdown to be written to their callers.
constexpr auto kShutdownDrain = 250ms;

std::filesystem::path worker_binary() {
  return std::filesystem::read_symlink("/proc/self/exe").parent_path() / "switchboard-worker";
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names) out += (out.empty() ? "" : ",") + name;
  return out;
}

// Settings a reload cannot move under a running process (docs/configuration.md, "Reload").
void warn_about_restart_only_changes(const config::Config& before, const config::Config& after) {
  if (before.listen_display() != after.listen_display()) {
    log_warn("reload: `listen` changed; it applies after a restart",
             {{"from", before.listen_display()}, {"to", after.listen_display()}});
  }
  if (before.allow_insecure_bind != after.allow_insecure_bind) {
    log_warn("reload: `allow_insecure_bind` changed; it applies after a restart");
  }
  if (before.audit_path != after.audit_path)
    log_warn("reload: `audit_path` changed; it applies after a restart");
  if (before.control_socket_path() != after.control_socket_path()) {
    log_warn("reload: `control_socket` changed; it applies after a restart");
  }
  const auto metrics_display = [](const config::Config& config) {
    return config.metrics_listen ? config.metrics_listen->display() : std::string("off");
  };
  if (metrics_display(before) != metrics_display(after)) {
    log_warn("reload: `metrics_listen` changed; it applies after a restart",
             {{"from", metrics_display(before)}, {"to", metrics_display(after)}});
  }
  for (const auto& attach : after.pods) {
    const auto old =
        std::find_if(before.pods.begin(), before.pods.end(),
                     [&](const auto& candidate) { return candidate.name == attach.name; });
    if (old == before.pods.end()) {
      log_warn("reload: [[pty_attach]] added; it is dialled after a restart",
               {{"attach", attach.name}});
    } else if (old->url != attach.url || old->secret_file != attach.secret_file) {
      log_warn("reload: [[pty_attach]] url or secret_file changed; it applies after a restart",
               {{"attach", attach.name}});
    }
  }
  for (const auto& attach : before.pods) {
    const bool kept = std::any_of(after.pods.begin(), after.pods.end(), [&](const auto& candidate) {
      return candidate.name == attach.name;
    });
    if (!kept)
      log_warn("reload: [[pty_attach]] removed; it keeps dialling until a restart",
               {{"attach", attach.name}});
  }
}

// What the process was handed by a switch in place or its service manager
// (docs/architecture.md, "Switching"): descriptors by name, and the state beside them.
struct Inherited {
  std::optional<SwitchState> state;
  std::vector<NamedDescriptor> descriptors;
  std::set<std::string> names;  // of every descriptor handed over

  base::UniqueFd take(std::string_view name) {
    for (auto it = descriptors.begin(); it != descriptors.end(); ++it) {
      if (it->name != name) continue;
      base::UniqueFd fd = std::move(it->fd);
      descriptors.erase(it);
      return fd;
    }
    return {};
  }
};

Inherited take_inherited() {
  Inherited inherited;
  std::string why;
  inherited.descriptors = take_inherited_descriptors(why);
  if (!why.empty()) log_warn("ignoring the descriptors the process was handed", {{"error", why}});
  for (const auto& descriptor : inherited.descriptors) inherited.names.insert(descriptor.name);
  const base::UniqueFd state_file = inherited.take(kStateName);
  if (!state_file.valid()) return inherited;
  auto bytes = read_memory_file(state_file.get(), kMaxSwitchStateBytes, why);
  if (bytes) inherited.state = decode_switch_state(*bytes, why);
  if (!inherited.state) {
    log_error("the state a switch handed over does not read; starting afresh", {{"error", why}});
  }
  return inherited;
}

// A descriptor nobody took: a computer's or a caller's socket is shut down, so that its
// peer hears of it at once rather than when its own keep-alive gives up.
void close_leftover(NamedDescriptor& leftover, const ServiceNotifier& store) {
  log_warn("closing a descriptor nobody took up", {{"name", leftover.name}});
  ::shutdown(leftover.fd.get(), SHUT_RDWR);
  store.forget(leftover.name);
}

class Supervisor {
 public:
  Supervisor(const ServeProgram& program, std::string home,
             std::shared_ptr<const config::Config> config, ServiceNotifier notifier,
             Timings timings, Inherited inherited)
      : program_(program),
        config_path_(program.config_path),
        home_(std::move(home)),
        notifier_(std::move(notifier)),
        inherited_(std::move(inherited)),
        jwks_refetch_(timings.jwks_refetch),
        audit_(io_, config->audit_path, timings.audit_window),
        workers_(io_, worker_binary(), audit_, timings, notifier_),
        subscriptions_(static_cast<std::size_t>(config->limits.max_subscriptions)),
        streams_(io_.get_executor(),
                 static_cast<std::size_t>(config->limits.max_streams_per_caller)),
        replies_(config->limits.max_reply_buffer_bytes),
        resumable_(io_.get_executor(), replies_),
        state_{.config = config,
               .clients = std::make_shared<ClientTable>(config->clients),
               .services = {workers_, audit_, calls_, tasks_, replies_, metrics_,
                            tools_list_errors_, subscriptions_, streams_, tool_book_, inputs_},
               .resumable = resumable_},
        http_services_(http_services(state_, timings)),
        http_(io_, config->listen_ip, config->listen_port, http_services_,
              inherited_.take(kHttpListenerName)),
        control_(
            io_, config->control_socket_path(),
            [this] { return workers_json(workers_.rows(), metrics_); },
            inherited_.take(kControlListenerName)),
        signals_(io_, SIGHUP, SIGTERM, SIGINT),
        drain_timer_(io_),
        lapse_timer_(io_),
        heap_trimmer_(io_),
        pods_(io_, state_.config, state_.services, state_.tracer, PodTimings{},
              proxy_environment()) {
    state_.sign_in = start_sign_in(*config);
    state_.tracer = start_tracer(*config);
    signals_.add(SIGUSR2);
    signals_.add(SIGUSR1);
    audit_.set_unrelayed_cap(config->limits.audit_unrelayed_per_minute);
    if (config->metrics_listen) {
      metrics_server_ = std::make_unique<MetricsServer>(
          io_, *config->metrics_listen, [this] { return scrape(); },
          inherited_.take(kMetricsListenerName));
    }
    switch_ = std::make_unique<SwitchOver>(SwitchParts{.io = io_,
                                                       .program = program_,
                                                       .http = http_,
                                                       .control = control_,
                                                       .metrics_server = metrics_server_.get(),
                                                       .pods = pods_,
                                                       .workers = workers_,
                                                       .tasks = tasks_,
                                                       .subscriptions = subscriptions_,
                                                       .calls = calls_,
                                                       .audit = audit_,
                                                       .metrics = metrics_,
                                                       .notifier = notifier_});
    control_.on_upgrade(
        [this](base::UniqueFd requester) { begin_switch(std::move(requester), Carrier::kExec); });
    store_listeners();
  }

  int run() {
    const auto& config = *state_.config;
    http_.start();
    control_.start();
    if (metrics_server_) metrics_server_->start();
    // Ready for the service manager once it listens and every computer's worker is up.
    workers_.on_computer_notification([this](const std::string& computer, std::string body) {
      relay_computer_notification(state_.services, computer, std::move(body));
    });
    workers_.set_drain(std::chrono::seconds(config.timeouts.drain_secs));
    workers_.set_worker_buffer(config.limits.max_worker_buffer_bytes);
    workers_.start(config.computers, [this] { notifier_.ready(); });
    take_up_switch();
    std::vector<std::string> names;
    for (const auto& computer : config.computers) names.push_back(computer.name);
    log_info("listening",
             {{"listen", config.listen_display()},
              {"computers", join(names)},
              {"clients", std::to_string(config.clients.size())},
              {"pty_attach", std::to_string(config.pods.size())},
              {"metrics_listen",
               config.metrics_listen ? config.metrics_listen->display() : std::string("off")}});
    if (config.metrics_listen && !config.metrics_listen->loopback()) {
      log_warn(
          "metrics_listen is not a loopback address: whoever reaches it sees every computer "
          "and caller name, with no token",
          {{"metrics_listen", config.metrics_listen->display()}});
    }
    for (const auto& name : config.unused_computers()) {
      log_warn("no client or pty attach may use this computer", {{"computer", name}});
    }
    for (const auto& name : config.wildcard_clients()) {
      log_info("client reaches every computer, including ones added later", {{"client", name}});
    }
    pods_.start();
    heap_trimmer_.start();
    lapse_subscriptions();
    wait_for_signal();
    io_.run();
    return 0;
  }

 private:
  // Everything /metrics shows, read now without waiting on any worker.
  std::string scrape() const {
    return exposition(ScrapeSources{.metrics = metrics_,
                                    .workers = workers_.rows(),
                                    .connections_open = http_.open_connections(),
                                    .reply_buffer_bytes = replies_.held(),
                                    .reply_buffer_capacity = replies_.capacity()});
  }

  // Every second, subscriptions whose caller has had no stream for the resume window end
  // (docs/protocol.md, "Subscriptions").
  void lapse_subscriptions() {
    lapse_timer_.expires_after(std::chrono::seconds(1));
    lapse_timer_.async_wait([this](const boost::system::error_code& error) {
      if (error) return;
      const auto& timeouts = state_.config->timeouts;
      lapse_streamless_subscriptions(state_.services, std::chrono::seconds(timeouts.resume_secs),
                                     std::chrono::seconds(timeouts.control_secs));
      lapse_subscriptions();
    });
  }

  void wait_for_signal() {
    signals_.async_wait([this](const boost::system::error_code& error, int signal) {
      if (error) return;
      if (signal == SIGUSR2) {
        begin_switch(base::UniqueFd(), Carrier::kExec);
        return wait_for_signal();
      }
      // The unit's RestartKillSignal: `systemctl restart` (packaging/README.md).
      if (signal == SIGUSR1) {
        if (!notifier_.has_store()) {
          log_warn(
              "SIGUSR1 hands over through the service manager's store, and there is none; "
              "ignored");
        } else {
          begin_switch(base::UniqueFd(), Carrier::kServiceManager);
        }
        return wait_for_signal();
      }
      // The switch ends this process in a moment, or is refused and leaves it as it was:
      // either way, one thing at a time.
      if (switch_->under_way()) {
        log_warn("a switch in place is under way; signal ignored",
                 {{"signal", std::to_string(signal)}});
        return wait_for_signal();
      }
      if (signal == SIGHUP) {
        reload();
        return wait_for_signal();
      }
      shut_down();
    });
  }

  void begin_switch(base::UniqueFd requester, Carrier carrier) {
    switch_->begin(std::chrono::seconds(state_.config->timeouts.drain_secs), std::move(requester),
                   carrier);
  }

  // The listeners go into the service manager's store, in place of whatever it held under
  // their names (the same listener, or one for an address the config no longer names).
  void store_listeners() {
    const auto store = [this](std::string_view name, int fd) {
      notifier_.forget(name);
      notifier_.store(name, fd);
    };
    store(kHttpListenerName, http_.listener_fd());
    store(kControlListenerName, control_.listener_fd());
    if (metrics_server_) store(kMetricsListenerName, metrics_server_->listener_fd());
  }

  // What a switch carried in: sessions for the workers to take up, connections with their
  // calls, tasks and counts (docs/architecture.md, "Switching").
  void take_up_switch() {
    // What the service manager kept after this service crashed: sessions, no state.
    const bool computers_kept =
        std::any_of(inherited_.names.begin(), inherited_.names.end(),
                    [](const std::string& name) { return name.starts_with(kSocketPrefix); });
    if (!inherited_.state && computers_kept) {
      inherited_.state = state_after_crash(inherited_.descriptors, state_.config->computers);
      log_info("taking up the sessions the service manager kept after a crash",
               {{"sessions", std::to_string(inherited_.state->sessions.size())}});
    }
    forget_what_was_carried();
    if (inherited_.state) {
      auto& state = *inherited_.state;
      metrics_.switched(state.switches, state.sessions_resumed);
      tasks_.restore(state.tasks);
      subscriptions_.restore(state.subscriptions);
      auto requester = std::make_shared<base::UniqueFd>(inherited_.take(state.requester));
      workers_.take_up_carried(
          state, inherited_.descriptors, [this, requester](std::vector<CarriedOutcome> outcomes) {
            report_switch(*inherited_.state, outcomes, std::move(*requester), audit_, metrics_);
          });
      // Once every carried caller has been heard from, its calls are open again: the
      // requests routed to them find them, and the sessions can be handed over.
      http_.take_up_connections(std::move(state.connections), inherited_.descriptors, [this] {
        const auto& carried = *inherited_.state;
        calls_.restore_routes(carried.routes, carried.next_routed);
        workers_.carried_callers_heard();
      });
    }
    for (auto& leftover : inherited_.descriptors) {
      close_leftover(leftover, notifier_);
      audit_session_not_taken_up(leftover.name, state_.config->computers, audit_);
    }
    inherited_.descriptors.clear();
  }

  // What the store held only to hand over (the state, callers' connections, records of
  // computers this config has not) leaves it at once: a later crash must never find a
  // stale state. A computer's socket stays until its session ends; a worker's record
  // file is replaced when its worker spawns.
  void forget_what_was_carried() {
    for (const auto& name : inherited_.names) {
      const bool transient =
          name == kStateName || name == kRequesterName || name.starts_with(kCallerPrefix);
      const bool stale_record =
          name.starts_with(kRecordPrefix) &&
          std::none_of(
              state_.config->computers.begin(), state_.config->computers.end(),
              [&](const auto& computer) { return name == record_file_name(computer.name); });
      if (transient || stale_record) notifier_.forget(name);
    }
  }

  void reload() {
    notifier_.reloading();
    apply_reload();
    notifier_.ready();
  }

  void apply_reload() {
    std::shared_ptr<const config::Config> next;
    try {
      next = std::make_shared<const config::Config>(config::load_config_file(config_path_, home_));
    } catch (const std::exception& error) {
      log_error("reload failed; keeping the old config", {{"error", error.what()}});
      metrics_.reload(false);
      return;
    }
    warn_about_restart_only_changes(*state_.config, *next);
    // Computers first: a daemon presenting a newly added secret must never meet 4003.
    workers_.set_drain(std::chrono::seconds(next->timeouts.drain_secs));
    workers_.set_worker_buffer(next->limits.max_worker_buffer_bytes);
    workers_.apply(next->computers);
    state_.clients = std::make_shared<ClientTable>(next->clients);
    state_.sign_in = start_sign_in(*next);
    state_.tracer = start_tracer(*next);
    state_.config = next;
    replies_.set_capacity(next->limits.max_reply_buffer_bytes);
    audit_.set_unrelayed_cap(next->limits.audit_unrelayed_per_minute);
    subscriptions_.set_max_per_caller(static_cast<std::size_t>(next->limits.max_subscriptions));
    streams_.set_max_per_caller(static_cast<std::size_t>(next->limits.max_streams_per_caller));
    pods_.reloaded();
    audit_.write("config_reloaded", nlohmann::json::object());
    metrics_.reload(true);
    log_info(
        "reload applied: clients, computers, in-flight limits, timeouts and pty-attach policies");
  }

  // OAuth sign-in as `config` has it, its issuers' keys being fetched; none without [oauth].
  std::shared_ptr<oauth::SignIn> start_sign_in(const config::Config& config) {
    if (!config.oauth) return nullptr;
    auto sign_in = std::make_shared<oauth::SignIn>(io_, outbound_, *config.oauth, jwks_refetch_);
    sign_in->start();
    return sign_in;
  }

  // Tracing as `config` has it, its exporters sending; none without [telemetry], or when its
  // headers file cannot be used (said in the log). A reload starts it anew: what the old
  // one still held is dropped and counted. With `audit_logs`, every audit line goes to it
  // as a log record too.
  std::shared_ptr<Tracer> start_tracer(const config::Config& config) {
    audit_.set_line_sink(nullptr);
    if (!config.telemetry) return nullptr;
    ExportHeaders headers;
    if (!config.telemetry->headers_file.empty()) {
      auto read = read_export_headers(config.telemetry->headers_file);
      if (const auto* why = std::get_if<std::string>(&read)) {
        log_error("[telemetry] headers_file cannot be used; no spans are exported",
                  {{"error", *why}});
        return nullptr;
      }
      headers = std::move(std::get<ExportHeaders>(read));
    }
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    const TraceResource resource{
        .service_version = SWITCHBOARD_VERSION,
        .service_instance = std::string(host) + ":" + std::to_string(config.listen_port)};
    auto exporter = std::make_shared<SpanExporter>(
        io_, outbound_, *config.telemetry, resource, headers,
        [this](std::string_view outcome, std::uint64_t spans) { metrics_.spans(outcome, spans); });
    exporter->start();
    std::shared_ptr<LogExporter> logs;
    if (config.telemetry->audit_logs) {
      logs = std::make_shared<LogExporter>(io_, outbound_, *config.telemetry, resource,
                                           std::move(headers),
                                           [this](std::string_view outcome, std::uint64_t records) {
                                             metrics_.audit_log_records(outcome, records);
                                           });
      logs->start();
    }
    auto tracer = std::make_shared<Tracer>(*config.telemetry, std::move(exporter), logs);
    if (logs) {
      audit_.set_line_sink([tracer = std::weak_ptr<Tracer>(tracer)](
                               std::string_view event, const std::string& line,
                               std::string_view trace_id, std::string_view span_id) {
        if (const auto live = tracer.lock()) {
          live->log(LogRecord{.time_unix_nanos = unix_nanos_now(),
                              .event = std::string(event),
                              .body = line,
                              .trace_id = std::string(trace_id),
                              .span_id = std::string(span_id)});
        }
      });
    }
    return tracer;
  }

  void shut_down() {
    log_info("shutting down");
    notifier_.stopping();
    heap_trimmer_.stop();
    lapse_timer_.cancel();
    http_.stop();
    control_.stop();
    if (metrics_server_) metrics_server_->stop();
    // Pod sockets are dropped, not closed (docs/protocol.md, "Pod sockets"); their requests in
    // progress are abandoned while the workers can still take the cancellations.
    pods_.stop();
    state_.sign_in.reset();  // its issuers' refreshes end
    state_.tracer.reset();   // its exporter stops
    workers_.shutdown([this] {
      audit_.stop();
      drain_timer_.expires_after(kShutdownDrain);
      drain_timer_.async_wait([this](const boost::system::error_code&) { io_.stop(); });
    });
  }

  const ServeProgram& program_;
  std::string config_path_;
  std::string home_;
  ServiceNotifier notifier_;
  Inherited inherited_;
  std::chrono::milliseconds
      jwks_refetch_;  // Timings: an issuer's keys fetched again at most so often
  net::io_context io_;
  AuditLog audit_;
  Metrics metrics_;
  WorkerRegistry workers_;
  CallBook calls_;
  TaskBook tasks_;
  SubscriptionBook subscriptions_;
  StreamBoard streams_;
  ToolBook tool_book_;
  InputBook inputs_;
  ReplyBudget replies_;
  LogThrottle tools_list_errors_;
  ResumableStreams resumable_;
  OutboundClient outbound_{io_, make_tls_context()};  // OAuth issuers' keys, spans
  SupervisorState state_;
  HttpServices http_services_;
  HttpServer http_;
  ControlServer control_;
  net::signal_set signals_;
  net::steady_timer drain_timer_;
  net::steady_timer lapse_timer_;
  base::HeapTrimmer heap_trimmer_;
  PodDialers pods_;  // [[pty_attach]]: pods served through the workers above
  std::unique_ptr<MetricsServer> metrics_server_;  // when metrics_listen is set
  std::unique_ptr<SwitchOver> switch_;
};

// The file at the path the process was started from: what a switch executes, so that a
// replaced file is an upgrade. A bare name was found on PATH; /proc/self/exe names it.
ServeProgram serve_program(const std::string& config_path, std::vector<std::string> argv) {
  std::filesystem::path path = argv.empty() ? std::string() : argv.front();
  std::error_code ignored;
  if (path.empty() || !path.has_parent_path()) {
    path = std::filesystem::read_symlink("/proc/self/exe", ignored);
  } else {
    path = std::filesystem::absolute(path, ignored);
  }
  return ServeProgram{.path = std::move(path),
                      .own = base::UniqueFd(::open("/proc/self/exe", O_PATH | O_CLOEXEC)),
                      .argv = std::move(argv),
                      .config_path = std::filesystem::absolute(config_path, ignored).string()};
}

}  // namespace

int run_serve(const std::string& config_path, std::string_view home,
              std::vector<std::string> argv) {
  std::signal(SIGPIPE, SIG_IGN);
  // First of all: nothing may open a descriptor where a handed-over one waits.
  Inherited inherited = take_inherited();
  const ServeProgram program = serve_program(config_path, std::move(argv));
  raise_descriptor_limit();
  // The supervisor holds callers' tokens and computers' sockets; a process of the same
  // user (a worker above all) must not read its memory through ptrace or /proc/PID/mem.
  if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
    log_warn("cannot mark the supervisor non-dumpable", {{"error", std::strerror(errno)}});
  auto config = std::make_shared<const config::Config>(config::load_config_file(config_path, home));
  const char* notify_socket = std::getenv("NOTIFY_SOCKET");
  // systemd 254 and later set FDSTORE to the unit's FileDescriptorStoreMax=; the unit
  // shipped for systemd 252 sets it itself (packaging/README.md).
  const char* store_size = std::getenv("FDSTORE");
  Supervisor supervisor(program, std::string(home), std::move(config),
                        ServiceNotifier(notify_socket ? notify_socket : "",
                                        store_size ? std::strtoull(store_size, nullptr, 10) : 0),
                        timings_from_environment(), std::move(inherited));
  return supervisor.run();
}

}  // namespace sb::supervisor
