#include "bench/bench_switchboard.hpp"

#include <signal.h>

#include <stdexcept>
#include <thread>

#include "harness/exposition.hpp"
#include "harness/http_client.hpp"

namespace sbbench {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

BenchSwitchboard::BenchSwitchboard(int computers, std::chrono::milliseconds start_timeout)
    : client_(harness::new_secret()), token_(client_.secret) {
  for (int i = 0; i < computers; ++i) {
    computer_secrets_.push_back(harness::new_secret());
    computers_.push_back(
        {std::string("c").append(std::to_string(i)), computer_secrets_.back().secret});
  }
  const auto deadline = Clock::now() + start_timeout;
  process_.emplace(config(64), harness::bin_dir() / "switchboard", start_timeout);
  for (;;) {
    const auto rows = workers();
    bool all_up = rows && rows->size() == computers_.size();
    if (rows) {
      for (const auto& row : *rows) all_up = all_up && row.value("state", "") != "starting";
    }
    if (all_up) return;
    if (Clock::now() > deadline)
      throw std::runtime_error("the workers did not all start in time\n--- switchboard log ---\n" +
                               log_tail());
    std::this_thread::sleep_for(20ms);
  }
}

harness::ConfigBuilder BenchSwitchboard::config(int max_inflight) const {
  harness::ConfigBuilder config;
  config.timeouts(60, 15, {})
      .set("max_inflight", std::to_string(max_inflight))
      .set("metrics_listen", harness::toml_string("127.0.0.1:" + std::to_string(metrics_port_)));
  for (std::size_t i = 0; i < computers_.size(); ++i)
    config.computer(computers_[i].name, computer_secrets_[i]);
  config.client("bench", client_, R"({ "*" = ["*"] })", "c0", 64);
  return config;
}

void BenchSwitchboard::reload_with_max_inflight(int max_inflight) {
  process_->write_config(config(max_inflight));
  process_->send_signal(SIGHUP);
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
  try {
    const auto response = harness::http_get(metrics_port_, "/metrics");
    if (response.status != 200) return "/metrics answered " + std::to_string(response.status);
    return harness::sum_of(harness::parse_exposition(response.body), "switchboard_calls_total",
                           {{"outcome", outcome}});
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
