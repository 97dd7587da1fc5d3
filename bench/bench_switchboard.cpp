#include "bench/bench_switchboard.hpp"

#include <signal.h>

#include <fstream>
#include <stdexcept>
#include <string_view>

#include "harness/exposition.hpp"
#include "harness/http_client.hpp"
#include "harness/notify_socket.hpp"
#include "harness/signing_key.hpp"

namespace sbbench {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

constexpr std::string_view kResource = "http://127.0.0.1/switchboard-bench";
constexpr std::string_view kIdentity = "bench-agent";

// An issuer at `origin`, its keys at /jwks there.
std::string oauth_table(const std::string& origin) {
  return "[oauth]\nresource = " + harness::toml_string(std::string(kResource)) +
         "\n\n[[oauth.issuer]]\nissuer = " + harness::toml_string(origin) +
         "\njwks_url = " + harness::toml_string(origin + "/jwks") + "\n";
}

}  // namespace

bool BenchSwitchboard::takes_oauth(const std::filesystem::path& program) {
  harness::ConfigBuilder config;
  config.timeouts(60, 15, {})
      .computer("c0", harness::new_secret())
      .client("bench", harness::new_secret(), R"({ "*" = ["*"] })", "c0")
      .block(oauth_table("http://127.0.0.1:1"));
  const harness::TempDir dir("sb-bench-oauth-check");
  const auto file = dir.path() / "config.toml";
  std::ofstream(file) << "listen = \"127.0.0.1:1\"\naudit_path = "
                      << harness::toml_string((dir.path() / "audit.jsonl").string()) << "\n"
                      << config.toml();
  return harness::run_command({program.string(), "check", "-c", file.string()}, dir.path())
             .exit_code == 0;
}

BenchSwitchboard::BenchSwitchboard(int computers, std::chrono::milliseconds start_timeout,
                                   const std::filesystem::path& program, int streams_per_caller,
                                   bool oauth, bool tracing)
    : client_(harness::new_secret()),
      token_(client_.secret),
      streams_per_caller_(streams_per_caller) {
  if (tracing) collector_ = std::make_unique<harness::FixedHttpOrigin>("{}");
  if (oauth) {
    const auto key = harness::make_signing_key("RS256", "bench-1");
    issuer_ = std::make_unique<harness::FixedHttpOrigin>(
        nlohmann::json{{"keys", nlohmann::json::array({key.jwk()})}}.dump());
    const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    access_token_ = key.compact_jws({{"typ", "at+jwt"}}, {{"iss", issuer_->url("")},
                                                          {"aud", std::string(kResource)},
                                                          {"sub", std::string(kIdentity)},
                                                          {"iat", now},
                                                          {"exp", now + 24 * 3600}});
  }
  for (int i = 0; i < computers; ++i) {
    computer_secrets_.push_back(harness::new_secret());
    computers_.push_back(
        {std::string("c").append(std::to_string(i)), computer_secrets_.back().secret});
  }
  const harness::TempDir notify_dir("sb-bench-notify");
  const harness::NotifySocket notify(notify_dir.path() / "notify.sock");
  const auto begin = Clock::now();
  {
    const harness::ScopedEnv notify_env("NOTIFY_SOCKET", notify.path().string());
    process_.emplace(config(64), program, start_timeout);
  }
  listening_after_ = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - begin);
  bool ready = false;
  for (auto left = start_timeout - (Clock::now() - begin); !ready && left > 0ms;
       left = start_timeout - (Clock::now() - begin)) {
    const auto message = notify.next(std::chrono::duration_cast<std::chrono::milliseconds>(left));
    ready = message && message->find("READY=1") != std::string::npos;
  }
  if (!ready)
    throw std::runtime_error("the workers did not all start in time\n--- switchboard log ---\n" +
                             log_tail());
  all_up_after_ = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - begin);
}

harness::ConfigBuilder BenchSwitchboard::config(int max_inflight) const {
  harness::ConfigBuilder config;
  config.timeouts(60, 15, {})
      .set("max_inflight", std::to_string(max_inflight))
      .set("metrics_listen", harness::toml_string("127.0.0.1:" + std::to_string(metrics_port_)));
  for (std::size_t i = 0; i < computers_.size(); ++i)
    config.computer(computers_[i].name, computer_secrets_[i]);
  config.client("bench", client_, R"({ "*" = ["*"] })", "c0", 64);
  if (issuer_) {
    config.client_key("oauth_identity", harness::toml_string(std::string(kIdentity)));
    config.block(oauth_table(issuer_->url("")));
  }
  if (collector_) {
    config.block("[telemetry]\nendpoint = " + harness::toml_string(collector_->url("")) +
                 "\nsample_ratio = 1.0\n");
  }
  if (streams_per_caller_ > 0)
    config.block("[limits]\nmax_streams_per_caller = " + std::to_string(streams_per_caller_));
  return config;
}

void BenchSwitchboard::reload_with_max_inflight(int max_inflight) {
  process_->write_config(config(max_inflight));
  process_->send_signal(SIGHUP);
}

nlohmann::json BenchSwitchboard::switch_in_place(std::chrono::milliseconds timeout) {
  const std::size_t before = process_->audit().count("service_restarted");
  process_->send_signal(SIGUSR2);
  if (!process_->audit().wait_for_count("service_restarted", before + 1, {}, timeout))
    return nullptr;
  return process_->audit().events("service_restarted").at(before);
}

harness::CommandResult BenchSwitchboard::cli(std::vector<std::string> args) const {
  return process_->run_cli(std::move(args));
}

std::optional<nlohmann::json> BenchSwitchboard::workers() const {
  try {
    return process_->workers();
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::variant<double, std::string> BenchSwitchboard::calls_counted(
    const std::string& outcome) const {
  return metric_sum("switchboard_calls_total", {{"outcome", outcome}});
}

std::variant<double, std::string> BenchSwitchboard::metric_sum(
    const std::string& family, const harness::Labels& labels) const {
  try {
    const auto response = harness::http_get(metrics_port_, "/metrics");
    if (response.status != 200) return "/metrics answered " + std::to_string(response.status);
    return harness::sum_of(harness::parse_exposition(response.body), family, labels);
  } catch (const std::exception& error) {
    return std::string("/metrics: ") + error.what();
  }
}

std::vector<pid_t> BenchSwitchboard::worker_pids() const {
  std::vector<pid_t> pids;
  if (const auto rows = workers()) {
    for (const auto& row : *rows) pids.push_back(row.value("pid", 0));
  }
  return pids;
}

int BenchSwitchboard::worker_restarts() const {
  int restarts = 0;
  if (const auto rows = workers()) {
    for (const auto& row : *rows) restarts += row.value("restarts", 0);
  }
  return restarts;
}

std::string BenchSwitchboard::log_tail(std::size_t bytes) const {
  const std::string all = process_->stderr_text();
  return all.size() > bytes ? all.substr(all.size() - bytes) : all;
}

}  // namespace sbbench
