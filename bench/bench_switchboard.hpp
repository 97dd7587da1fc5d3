// The real `switchboard serve`, started for a measurement through the harness
// (harness/switchboard_process.hpp): N computers c0, c1, ..., one wildcard client, and
// max_inflight 64 everywhere, metrics on a port of its own. Ready once it listens and every worker
// has said hello (READY=1 on a notify socket the bench gives it, as systemd would), so that
// what is measured next is the attach, not the spawn; how long each took is kept. With
// `oauth`, the client is also named by an issuer's JWT access tokens (docs/auth.md), the
// issuer's key set served by the bench itself, and a token is made for it. With `tracing`,
// every request's span goes to a collector the bench serves.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "harness/config_builder.hpp"
#include "harness/exposition.hpp"
#include "harness/fixed_http_origin.hpp"
#include "harness/process.hpp"
#include "harness/switchboard_process.hpp"

namespace sbbench {

struct ComputerIdentity {
  std::string name;    // c0, c1, ...
  std::string secret;  // what the fake computer presents
};

class BenchSwitchboard {
 public:
  // Throws with the log's tail when it does not come up within `start_timeout`. `program`:
  // the switchboard to measure, its switchboard-worker beside it; this build's by default.
  // `streams_per_caller`: the wildcard client's `[limits] max_streams_per_caller`, 0 for the
  // default.
  BenchSwitchboard(int computers, std::chrono::milliseconds start_timeout,
                   const std::filesystem::path& program = harness::bin_dir() / "switchboard",
                   int streams_per_caller = 0, bool oauth = false, bool tracing = false);
  // Whether `program` takes an [oauth] table (an older build, measured A/B, may not).
  static bool takes_oauth(const std::filesystem::path& program);

  int port() const { return process_->port(); }
  pid_t pid() const { return process_->pid(); }
  const std::vector<ComputerIdentity>& computers() const { return computers_; }
  const std::string& token() const { return token_; }  // the wildcard client's
  // A JWT access token naming the same client; empty without `oauth`.
  const std::string& access_token() const { return access_token_; }
  // From the start of `switchboard serve` until /healthz answered, and until READY=1.
  std::chrono::microseconds listening_after() const { return listening_after_; }
  std::chrono::microseconds all_up_after() const { return all_up_after_; }

  // `switchboard <args...> -c FILE`.
  harness::CommandResult cli(std::vector<std::string> args) const;
  // `switchboard workers --json`: the "workers" rows, or nothing on failure.
  std::optional<nlohmann::json> workers() const;
  // Worker pids in config order (0 where a worker has none right now).
  std::vector<pid_t> worker_pids() const;
  // Restarts summed over every worker (a crashed worker is a failed run).
  int worker_restarts() const;
  std::string log_tail(std::size_t bytes = 2000) const;
  // Rewrites the config with another global max_inflight and sends SIGHUP (not waiting).
  void reload_with_max_inflight(int max_inflight);
  // SIGUSR2: a switch in place (docs/architecture.md, "Switching"); waits for its
  // service_restarted line and returns it (null past `timeout`).
  nlohmann::json switch_in_place(std::chrono::milliseconds timeout);
  // The tool calls /metrics counts with this outcome, over every computer (docs/metrics.md);
  // an error text when the scrape fails or does not parse.
  std::variant<double, std::string> calls_counted(const std::string& outcome) const;
  // The sum of a /metrics family's samples with these labels, or the scrape's error text.
  std::variant<double, std::string> metric_sum(const std::string& family,
                                               const harness::Labels& labels) const;

 private:
  harness::ConfigBuilder config(int max_inflight) const;

  std::vector<ComputerIdentity> computers_;
  std::vector<harness::Secret> computer_secrets_;
  harness::Secret client_;
  std::string token_;
  std::unique_ptr<harness::FixedHttpOrigin> issuer_;     // its key set, with `oauth`
  std::unique_ptr<harness::FixedHttpOrigin> collector_;  // takes spans, with `tracing`
  std::string access_token_;
  int streams_per_caller_ = 0;
  int metrics_port_ = harness::free_port();
  std::chrono::microseconds listening_after_{0};
  std::chrono::microseconds all_up_after_{0};
  std::optional<harness::SwitchboardProcess> process_;
};

}  // namespace sbbench
