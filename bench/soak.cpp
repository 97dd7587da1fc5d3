// switchboard-soak: minutes of mixed load over four computers while the run does to the
// switchboard what crashes, networks, operators and bad clients do (docs/robustness.md,
// "Soak"). The computers are real `switchboard-demo-computer` daemons, which redial.
//
//   c0  never faulted: every call to it must succeed, whatever happens to the others;
//   c1  its worker is killed (SIGKILL) and respawned;
//   c2  its worker is stopped (SIGSTOP) for 5 s, then continued;
//   c3  its daemon is killed and started again (a dropped computer that redials).
// Besides: SIGHUP with a real change (the in-flight cap), slowloris clients, callers that
// vanish mid-call, clients that pipeline and never read, and once the supervisor's
// descriptor table filled. The report gives calls by outcome per computer, the
// supervisor's peak memory, and its descriptors before and after (which must match).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_switchboard.hpp"
#include "bench/callers.hpp"
#include "bench/proc_stats.hpp"
#include "harness/process.hpp"

namespace sbbench {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr int kComputers = 4;
constexpr int kCallersPerComputer = 2;
// Between two calls of one caller: enough load to keep every path busy, little enough that
// the audit file of a long run stays small.
constexpr auto kCallPause = 20ms;
constexpr auto kFaultEvery = 10s;

// Outcomes by computer: "ok", "rpc <code>", "tool_error", "http <status>", "transport",
// "wrong reply".
class Outcomes {
 public:
  void count(const std::string& computer, const std::string& outcome) {
    const std::lock_guard lock(mutex_);
    ++by_computer_[computer][outcome];
  }
  std::map<std::string, std::map<std::string, long>> snapshot() const {
    const std::lock_guard lock(mutex_);
    return by_computer_;
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::map<std::string, long>> by_computer_;
};

std::string outcome_of(const std::optional<std::pair<int, std::string>>& answer,
                       const std::string& text) {
  if (!answer) return "transport";
  if (answer->first != 200) return "http " + std::to_string(answer->first);
  const json reply = json::parse(answer->second, nullptr, false);
  if (!reply.is_object()) return "wrong reply";
  if (reply.contains("error")) return "rpc " + reply["error"].value("code", json(0)).dump();
  const json& result = reply.value("result", json::object());
  if (result.value("isError", false)) return "tool_error";
  const json& content = result.value("content", json::array());
  if (!content.empty() && content[0].value("text", "") == text) return "ok";
  return "wrong reply";
}

void call_loop(int port, const std::string& token, const std::string& computer, int caller,
               const std::atomic<bool>& stop, Outcomes& outcomes) {
  HttpPoller http(port, token);
  for (long n = 0; !stop.load(); ++n) {
    const std::string text = computer + "/" + std::to_string(caller) + "/" + std::to_string(n);
    const json call = {{"jsonrpc", "2.0"},
                       {"id", n},
                       {"method", "tools/call"},
                       {"params", {{"name", "echo"}, {"arguments", {{"text", text}}}}}};
    outcomes.count(computer, outcome_of(http.post("/mcp/" + computer, call.dump()), text));
    std::this_thread::sleep_for(kCallPause);
  }
}

// A raw loopback connection, closed with the object.
class Socket {
 public:
  explicit Socket(int port) : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ >= 0 && ::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  void send(const std::string& bytes) {
    if (fd_ >= 0) ::send(fd_, bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  }

 private:
  int fd_;
};

std::size_t open_descriptors(pid_t pid) {
  std::size_t count = 0;
  std::error_code error;
  for (std::filesystem::directory_iterator entry("/proc/" + std::to_string(pid) + "/fd", error);
       !error && entry != std::filesystem::directory_iterator(); entry.increment(error))
    ++count;
  return count;
}

// The four demo daemons, one per computer, each restartable.
class Daemons {
 public:
  Daemons(const BenchSwitchboard& sb, const std::filesystem::path& dir) : sb_(sb), dir_(dir) {
    for (const auto& computer : sb.computers()) {
      std::ofstream(dir / (computer.name + ".secret")) << computer.secret << "\n";
      pids_.push_back(start(computer.name));
    }
  }
  ~Daemons() {
    for (const pid_t pid : pids_) stop(pid);
  }
  void restart(std::size_t index) {
    stop(pids_[index]);
    pids_[index] = start(sb_.computers()[index].name);
  }

 private:
  pid_t start(const std::string& name) const {
    return harness::start_process(
        {(harness::bin_dir() / "switchboard-demo-computer").string(), "--url",
         "ws://127.0.0.1:" + std::to_string(sb_.port()) + "/vm/attach", "--secret-file",
         (dir_ / (name + ".secret")).string()},
        std::nullopt, std::nullopt);
  }
  static void stop(pid_t pid) {
    if (pid <= 0) return;
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }

  const BenchSwitchboard& sb_;
  std::filesystem::path dir_;
  std::vector<pid_t> pids_;
};

bool all_ready(HttpPoller& poller) {
  const auto answer = poller.get("/computers");
  if (!answer || answer->first != 200) return false;
  const json list = json::parse(answer->second, nullptr, false);
  if (!list.is_array() || list.size() != kComputers) return false;
  for (const auto& entry : list)
    if (!entry.value("ready", false)) return false;
  return true;
}

bool wait_for(const std::function<bool()>& condition, std::chrono::seconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (!condition()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(100ms);
  }
  return true;
}

void say(const std::string& line) {
  std::cerr << "soak: " << line << std::endl;
}

// The faults, one every kFaultEvery in turn; the descriptor table is filled once, in the
// middle of the run.
class Faults {
 public:
  Faults(BenchSwitchboard& sb, Daemons& daemons) : sb_(sb), daemons_(daemons) {}

  void next() {
    switch (step_++ % 6) {
      case 0:
        return kill_worker("c1");
      case 1:
        return stall_worker("c2");
      case 2:
        say("killing c3's daemon and starting it again");
        return daemons_.restart(3);
      case 3:
        return reload_with_a_change();
      case 4:
        return bad_clients();
      case 5:
        if (!filled_) fill_descriptors();
        return;
    }
  }
  int count() const { return step_; }

 private:
  pid_t worker_of(const std::string& computer) const {
    const auto rows = sb_.workers();
    if (!rows) return 0;
    for (const auto& row : *rows)
      if (row.value("computer", "") == computer) return row.value("pid", 0);
    return 0;
  }

  void kill_worker(const std::string& computer) {
    say("killing " + computer + "'s worker");
    if (const pid_t pid = worker_of(computer); pid > 0) ::kill(pid, SIGKILL);
  }

  void stall_worker(const std::string& computer) {
    const pid_t pid = worker_of(computer);
    if (pid <= 0) return;
    say("stopping " + computer + "'s worker for 5 s");
    ::kill(pid, SIGSTOP);
    std::this_thread::sleep_for(5s);
    ::kill(pid, SIGCONT);
  }

  // A real change every time: the global in-flight cap goes between 64 and 48.
  void reload_with_a_change() {
    const int cap = cap_high_ ? 48 : 64;
    sb_.reload_with_max_inflight(cap);
    cap_high_ = !cap_high_;
    say("SIGHUP with max_inflight = " + std::to_string(cap));
  }

  // Slowloris heads, callers that vanish mid-call, pipelining clients that never read; all
  // closed after a while, as such clients end.
  void bad_clients() {
    say("50 slowloris, 20 vanishing callers, 10 pipelining non-readers for 8 s");
    std::vector<std::unique_ptr<Socket>> held;
    for (int i = 0; i < 50; ++i) {
      held.push_back(std::make_unique<Socket>(sb_.port()));
      held.back()->send("GET /healthz HTTP/1.1\r\nHost: x\r\n");
    }
    const std::string call =
        R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"gone"}}})";
    for (int i = 0; i < 20; ++i) {
      Socket vanishing(sb_.port());
      vanishing.send("POST /mcp/c1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + sb_.token() +
                     "\r\nContent-Type: application/json\r\nContent-Length: " +
                     std::to_string(call.size()) + "\r\n\r\n" + call);
    }
    std::string pipelined;
    for (int i = 0; i < 200; ++i) pipelined += "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    for (int i = 0; i < 10; ++i) {
      held.push_back(std::make_unique<Socket>(sb_.port()));
      held.back()->send(pipelined);
    }
    std::this_thread::sleep_for(8s);
  }

  // Lowers the supervisor's descriptor limit to just above what it uses, opens more
  // connections than that, holds them, then lets go and restores the limit.
  void fill_descriptors() {
    filled_ = true;
    rlimit before{};
    if (::prlimit(sb_.pid(), RLIMIT_NOFILE, nullptr, &before) != 0) return;
    const rlim_t cap = open_descriptors(sb_.pid()) + 16;
    const rlimit lowered{cap, before.rlim_max};
    if (::prlimit(sb_.pid(), RLIMIT_NOFILE, &lowered, nullptr) != 0) return;
    say("descriptor table filled (limit " + std::to_string(cap) + ") for 5 s");
    {
      std::vector<std::unique_ptr<Socket>> held;
      for (int i = 0; i < 64; ++i) held.push_back(std::make_unique<Socket>(sb_.port()));
      std::this_thread::sleep_for(5s);
    }
    ::prlimit(sb_.pid(), RLIMIT_NOFILE, &before, nullptr);
  }

  BenchSwitchboard& sb_;
  Daemons& daemons_;
  int step_ = 0;
  bool cap_high_ = true;
  bool filled_ = false;
};

int run(std::chrono::seconds duration) {
  BenchSwitchboard sb(kComputers, 30s);
  harness::TempDir dir("sb-soak");
  Daemons daemons(sb, dir.path());
  HttpPoller poller(sb.port(), sb.token());
  if (!wait_for([&] { return all_ready(poller); }, 30s)) {
    say("the computers did not attach\n" + sb.log_tail());
    return 2;
  }
  const std::size_t descriptors_before = open_descriptors(sb.pid());
  say("4 computers ready; supervisor has " + std::to_string(descriptors_before) +
      " descriptors; running for " + std::to_string(duration.count()) + " s");

  Outcomes outcomes;
  std::atomic<bool> stop{false};
  std::vector<std::thread> callers;
  for (const auto& computer : sb.computers()) {
    for (int i = 0; i < kCallersPerComputer; ++i)
      callers.emplace_back(call_loop, sb.port(), sb.token(), computer.name, i, std::cref(stop),
                           std::ref(outcomes));
  }
  Faults faults(sb, daemons);
  const auto end = Clock::now() + duration;
  auto next_fault = Clock::now() + kFaultEvery;
  while (Clock::now() < end) {
    std::this_thread::sleep_for(200ms);
    if (Clock::now() >= next_fault) {
      faults.next();
      next_fault = Clock::now() + kFaultEvery;
    }
  }
  stop = true;
  for (auto& thread : callers) thread.join();

  // Settled: every computer back, every connection of the run closed.
  const bool ready = wait_for([&] { return all_ready(poller); }, 120s);
  const bool same_descriptors =
      wait_for([&] { return open_descriptors(sb.pid()) == descriptors_before; }, 90s);
  const std::size_t descriptors_after = open_descriptors(sb.pid());

  long unfaulted_failures = 0;
  std::cout << "calls by outcome (c0 is never faulted):\n";
  for (const auto& [computer, counts] : outcomes.snapshot()) {
    std::cout << "  " << computer << ":";
    for (const auto& [outcome, count] : counts) {
      std::cout << "  " << outcome << " " << count;
      if (computer == "c0" && outcome != "ok") unfaulted_failures += count;
    }
    std::cout << "\n";
  }
  const auto peak = harness::status_kib(sb.pid(), "VmHWM");
  std::cout << "faults injected: " << faults.count() << "\n"
            << "failures on c0: " << unfaulted_failures << " (must be 0)\n"
            << "supervisor peak resident: " << (peak ? *peak / 1024 : -1)
            << " MiB (reply budget 512 MiB)\n"
            << "supervisor descriptors: " << descriptors_before << " before, " << descriptors_after
            << " after\n"
            << "worker restarts: " << sb.worker_restarts() << "\n";
  const bool alive = ::kill(sb.pid(), 0) == 0;
  if (!alive) say("the supervisor died\n" + sb.log_tail());
  if (!ready) say("not every computer came back");
  const bool passed = alive && ready && same_descriptors && unfaulted_failures == 0;
  std::cout << (passed ? "soak passed\n" : "soak FAILED\n");
  return passed ? 0 : 1;
}

}  // namespace
}  // namespace sbbench

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  const double minutes = argc > 1 ? std::stod(argv[1]) : 10.0;
  try {
    return sbbench::run(std::chrono::seconds(static_cast<long>(minutes * 60)));
  } catch (const std::exception& error) {
    std::cerr << "soak: " << error.what() << "\n";
    return 2;
  }
}
