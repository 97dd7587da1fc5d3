#include "bench/bench_switchboard.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string_view>

#include "harness/exposition.hpp"
#include "harness/http_client.hpp"
#include "ipc/unique_fd.hpp"

namespace sbbench {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

// The service manager's end of the readiness protocol: a datagram socket the switchboard
// is told about in NOTIFY_SOCKET.
class NotifySocket {
 public:
  NotifySocket() : socket_(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    const std::string where = path();
    if (!socket_.valid() || where.size() >= sizeof address.sun_path)
      throw std::runtime_error("cannot make a notify socket at " + where);
    std::memcpy(address.sun_path, where.c_str(), where.size() + 1);
    if (::bind(socket_.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0)
      throw std::runtime_error("cannot bind " + where + ": " + std::strerror(errno));
  }
  std::string path() const { return (dir_.path() / "notify.sock").string(); }

  // Whether READY=1 arrived before `deadline`.
  bool wait_ready(Clock::time_point deadline) const {
    for (;;) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left <= 0ms) return false;
      pollfd readable{socket_.get(), POLLIN, 0};
      if (::poll(&readable, 1, static_cast<int>(left.count())) <= 0) continue;
      char datagram[4096];
      const auto got = ::recv(socket_.get(), datagram, sizeof datagram, 0);
      if (got > 0 &&
          std::string_view(datagram, std::size_t(got)).find("READY=1") != std::string_view::npos)
        return true;
    }
  }

 private:
  harness::TempDir dir_{"sb-bench-notify"};
  sb::ipc::UniqueFd socket_;
};

}  // namespace

BenchSwitchboard::BenchSwitchboard(int computers, std::chrono::milliseconds start_timeout)
    : client_(harness::new_secret()), token_(client_.secret) {
  for (int i = 0; i < computers; ++i) {
    computer_secrets_.push_back(harness::new_secret());
    computers_.push_back(
        {std::string("c").append(std::to_string(i)), computer_secrets_.back().secret});
  }
  const NotifySocket notify;
  const auto begin = Clock::now();
  {
    const harness::ScopedEnv notify_env("NOTIFY_SOCKET", notify.path());
    process_.emplace(config(64), harness::bin_dir() / "switchboard", start_timeout);
  }
  listening_after_ = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - begin);
  if (!notify.wait_ready(begin + start_timeout))
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
  return config;
}

void BenchSwitchboard::reload_with_max_inflight(int max_inflight) {
  process_->write_config(config(max_inflight));
  process_->send_signal(SIGHUP);
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
