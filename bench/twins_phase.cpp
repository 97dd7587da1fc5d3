// 9. Twins: two switchboards on loopback behind HAProxy with the shipped config, computers
// attached to both through switchboard-connect, callers looping calls through the front;
// one box killed with SIGKILL, then started again (docs/twins.md, "A box lost, a box
// back").
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "bench/attach.hpp"
#include "bench/bench_run.hpp"
#include "bench/report.hpp"
#include "harness/config_builder.hpp"
#include "harness/haproxy_front.hpp"
#include "harness/http_client.hpp"
#include "harness/switchboard_process.hpp"
#include "harness/wait.hpp"

namespace sbbench {
namespace {

using Clock = std::chrono::steady_clock;
using harness::fs::path;

struct TimedCall {
  Clock::time_point started;
  Clock::time_point ended;
  bool ok = false;
};

// Callers on keep-alive connections to the front, each calling `echo` on its computer
// one call after another, every reply checked; a failed call costs its connection.
class FrontCallers {
 public:
  FrontCallers(int port, const std::string& token, const std::vector<std::string>& computers,
               int callers)
      : calls_(callers) {
    for (int caller = 0; caller < callers; ++caller) {
      threads_.emplace_back(
          [this, port, token, caller, computer = computers[caller % computers.size()]] {
            loop(port, token, computer, caller);
          });
    }
  }
  ~FrontCallers() { stop(); }

  void stop() {
    stop_ = true;
    for (auto& thread : threads_)
      if (thread.joinable()) thread.join();
  }
  std::string first_error() const {
    const std::lock_guard lock(mutex_);
    return first_error_;
  }
  // Each caller's calls so far, in order.
  std::vector<std::vector<TimedCall>> calls() const {
    const std::lock_guard lock(mutex_);
    return calls_;
  }

 private:
  void loop(int port, const std::string& token, const std::string& computer, int caller) {
    std::unique_ptr<harness::HttpConnection> connection;
    for (long n = 0; !stop_; ++n) {
      TimedCall call{.started = Clock::now()};
      std::string text = std::to_string(caller);
      text.append("-").append(std::to_string(n));
      try {
        if (!connection) connection = std::make_unique<harness::HttpConnection>(port, 2s);
        const auto response = connection->request(
            harness::mcp_request("/mcp/" + computer, token,
                                 harness::tool_call(n, "echo", nlohmann::json{{"text", text}})),
            true, 10s);
        const auto reply = response.final_message();
        call.ok = response.status == 200 && reply.contains("result") &&
                  harness::result_text(reply) == text;
        if (!call.ok) note_error(std::to_string(response.status) + " " + response.body);
        if (response.header("Connection") == "close") connection.reset();
      } catch (const std::exception& error) {
        call.ok = false;
        note_error(error.what());
      }
      if (!call.ok) connection.reset();
      call.ended = Clock::now();
      const std::lock_guard lock(mutex_);
      calls_[caller].push_back(call);
    }
  }

  void note_error(const std::string& error) {
    const std::lock_guard lock(mutex_);
    if (first_error_.empty()) first_error_ = error;
  }

  std::atomic<bool> stop_{false};
  mutable std::mutex mutex_;
  std::vector<std::vector<TimedCall>> calls_;  // by caller
  std::string first_error_;
  std::vector<std::thread> threads_;
};

// What the calls say of one kill: those that failed in flight while the box died (started
// before `gone`, when it had been reaped, and ended after `kill`, the signal), those started
// after it and before `back` that failed, and how long after the signal every caller had
// its next call answered.
struct KillTally {
  long calls = 0;
  long failed_in_flight = 0;
  long failed_after = 0;
  double served_again_ms = 0;
};

KillTally tally_kill(const std::vector<std::vector<TimedCall>>& callers, Clock::time_point kill,
                     Clock::time_point gone, Clock::time_point back) {
  KillTally tally;
  for (const auto& calls : callers) {
    std::optional<Clock::time_point> served;
    for (const TimedCall& call : calls) {
      ++tally.calls;
      if (call.ended < kill) continue;
      if (call.started < gone) {
        if (!call.ok) ++tally.failed_in_flight;
      } else if (!call.ok && call.started < back) {
        ++tally.failed_after;
      }
      if (call.ok && call.started >= kill && !served) served = call.ended;
    }
    if (served) {
      tally.served_again_ms = std::max(
          tally.served_again_ms, std::chrono::duration<double, std::milli>(*served - kill).count());
    }
  }
  return tally;
}

long failed_since(const std::vector<std::vector<TimedCall>>& callers, Clock::time_point since) {
  long failed = 0;
  for (const auto& calls : callers) {
    for (const TimedCall& call : calls)
      if (call.started >= since && !call.ok) ++failed;
  }
  return failed;
}

// Calls the box relayed and its computer answered (a call it sent on to the twin, not
// attached there, is audited `not_attached`).
std::size_t calls_served(const harness::SwitchboardProcess& box) {
  const std::string audit = harness::read_file(box.audit_path());
  constexpr std::string_view kServed = "\"outcome\":\"ok\"";
  std::size_t count = 0;
  for (std::size_t at = audit.find(kServed); at != std::string::npos;
       at = audit.find(kServed, at + 1))
    ++count;
  return count;
}

// Whether every computer is ready on `box` for `token`.
bool all_ready(const harness::SwitchboardProcess& box, const std::string& token,
               const std::vector<std::string>& computers) {
  return std::all_of(computers.begin(), computers.end(), [&](const std::string& computer) {
    try {
      return harness::http_get(box.port(), "/readyz/" + computer, token).status == 200;
    } catch (const std::exception&) {
      return false;
    }
  });
}

// switchboard-connect processes, stopped (SIGTERM, then SIGKILL) and reaped at the end.
struct ConnectProcesses {
  std::vector<pid_t> pids;
  ConnectProcesses() = default;
  ConnectProcesses(const ConnectProcesses&) = delete;
  ConnectProcesses& operator=(const ConnectProcesses&) = delete;
  ~ConnectProcesses() {
    for (pid_t pid : pids) harness::stop_process(pid, 10s);
  }
};

double seconds_since(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

}  // namespace

void Bench::run_twins() {
  std::ostringstream table;
  table << "## 9. Twins: a lost box\n\n"
        << "Two switchboards on loopback with one config behind HAProxy "
           "(packaging/haproxy/switchboard-twins.cfg as shipped, but its addresses), "
        << plan_.twins_computers
        << " computers each attached to both through one switchboard-connect (default "
           "backoff) serving the demo computer over stdio, and a keep-alive caller per "
           "computer looping small calls through the front. One box is killed with "
           "SIGKILL; later it is started again on its port (docs/twins.md). A call failed "
           "in flight started before the killed box was reaped and ended after the signal; "
           "a caller is served again when a call it started after the signal is answered.\n\n"
        << row({"computers", "calls", "failed in flight as it died", "failed after it died",
                "every caller served again (ms)", "its computers back (s)",
                "front uses it again (s)", "failed during the return"})
        << separator(8);
  const auto program = harness::HaproxyFront::find();
  if (!program) {
    if (std::getenv("SWITCHBOARD_REQUIRE_HAPROXY"))
      failures_.add("twins setup", 1, "haproxy is not installed (Debian: haproxy)");
    table << "haproxy is not installed (Debian: haproxy): the twins were not measured.\n\n";
  } else {
    guarded("twins", [&] { twins_kill_and_return(*program, table); });
  }
  twins_table_ = table.str();
}

void Bench::twins_kill_and_return(const std::filesystem::path& haproxy, std::ostringstream& table) {
  progress(std::string("twins: two switchboards, ")
               .append(std::to_string(plan_.twins_computers))
               .append(" computers"));
  harness::ConfigBuilder config;
  std::vector<std::string> names;
  std::vector<harness::Secret> secrets;
  for (int i = 0; i < plan_.twins_computers; ++i) {
    names.push_back(std::string("c").append(std::to_string(i)));
    secrets.push_back(harness::new_secret());
    config.computer(names.back(), secrets.back());
  }
  const harness::Secret caller = harness::new_secret();
  config.client("bench", caller, R"({ "*" = ["*"] })", names.front());
  harness::SwitchboardProcess one(config, program_);
  harness::SwitchboardProcess two(config, program_);

  const auto attach_url = [](const harness::SwitchboardProcess& box) {
    return std::string("ws://127.0.0.1:").append(std::to_string(box.port())).append("/vm/attach");
  };
  ConnectProcesses connects;
  for (int i = 0; i < plan_.twins_computers; ++i) {
    const path secret_file = one.dir() / (names[i] + ".secret");
    std::ofstream(secret_file) << secrets[i].secret << "\n";
    const path log = one.dir() / (names[i] + ".connect.log");
    connects.pids.push_back(harness::start_process(
        {(harness::bin_dir() / "switchboard-connect").string(), "--url", attach_url(one), "--url",
         attach_url(two), "--secret-file", secret_file.string(), "--name", names[i], "--",
         (harness::bin_dir() / "switchboard-demo-computer").string(), "--stdio"},
        log, log));
  }
  if (!harness::eventually(
          [&] {
            return all_ready(one, caller.secret, names) && all_ready(two, caller.secret, names);
          },
          kReadyTimeout))
    throw std::runtime_error("the computers never attached to both switchboards");

  harness::HaproxyFront front(haproxy,
                              harness::source_dir() / "packaging/haproxy/switchboard-twins.cfg",
                              one.port(), two.port());
  FrontCallers callers(front.port(), caller.secret, names, plan_.twins_computers);
  std::this_thread::sleep_for(plan_.twins_window);
  if (calls_served(one) == 0 || calls_served(two) == 0)
    throw std::runtime_error("the front did not use both boxes; first error: " +
                             callers.first_error());

  progress("twins: SIGKILL to one box");
  const auto kill = Clock::now();
  one.send_signal(SIGKILL);
  if (!one.wait_exit(10s)) throw std::runtime_error("the killed switchboard did not exit");
  const auto gone = Clock::now();
  std::this_thread::sleep_for(plan_.twins_window);

  progress("twins: the box starts again");
  const std::size_t served = calls_served(one);
  const auto back = Clock::now();
  one.restart(/*same_port=*/true);
  double reattached_s = -1, used_again_s = -1;
  if (harness::eventually([&] { return all_ready(one, caller.secret, names); }, 120s))
    reattached_s = seconds_since(back);
  if (harness::eventually([&] { return calls_served(one) > served; }, 30s))
    used_again_s = seconds_since(back);
  std::this_thread::sleep_for(plan_.twins_window);
  callers.stop();

  const auto calls = callers.calls();
  const KillTally killed = tally_kill(calls, kill, gone, back);
  const long failed_returning = failed_since(calls, back);
  const auto seconds = [](double value) {
    return value < 0 ? std::string("never") : fixed(value, 1);
  };
  table << row({std::to_string(plan_.twins_computers), std::to_string(killed.calls),
                std::to_string(killed.failed_in_flight), std::to_string(killed.failed_after),
                fixed(killed.served_again_ms, 1), seconds(reattached_s), seconds(used_again_s),
                std::to_string(failed_returning)})
        << "\n";
  verdicts_.add("a killed twin fails only the calls in flight on it",
                std::to_string(killed.failed_after) + " failed after the kill",
                killed.failed_after == 0);
  verdicts_.add("every caller served again ≤ 1 s after a twin is killed",
                fixed(killed.served_again_ms, 1) + " ms", killed.served_again_ms <= 1000);
  verdicts_.add("no call fails while the twin returns",
                std::to_string(failed_returning) + " failed", failed_returning == 0);
  if (reattached_s < 0) failures_.add("twins", 1, "the computers never attached again");
  if (used_again_s < 0) failures_.add("twins", 1, "the front never used the box again");
}

}  // namespace sbbench
