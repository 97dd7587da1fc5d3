// The [[pty_attach]] dialer in process, with short timings injected (PtyTimings), against
// a fake pod: the redial loop's backoff, the keepalive pings and the idle limit
// (docs/protocol.md, "Pod sessions", "Pod redial"), which the end-to-end tests cannot reach
// with the real 20 s / 70 s / 60 s values.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <fstream>

#include "harness/fake_pod.hpp"
#include "supervisor/audit/audit_log.hpp"
#include "supervisor/callers/client_table.hpp"
#include "supervisor/pods/pod_dialer.hpp"
#include "supervisor/workers/registry.hpp"

namespace sb::supervisor {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using harness::FakePod;
using harness::FakePodOptions;

constexpr std::string_view kGrant = "0123456789abcdef0123456789abcdef";

PtyTimings fast_timings() {
  return PtyTimings{.first_backoff = 50ms,
                    .max_backoff = 400ms,
                    .stable_session = 10s,
                    .refusal_wait = 10s,
                    .ping_interval = 40ms,
                    .idle_limit = 150ms,
                    .connect_timeout = 2s,
                    .handshake_timeout = 2s};
}

// A supervisor without workers: one attach lending "alpha", which never attaches.
class DialerHarness {
 public:
  explicit DialerHarness(const std::string& url) {
    char pattern[] = "/tmp/sb-pty-XXXXXX";
    dir_ = ::mkdtemp(pattern);
    std::ofstream(dir_ / "grant.secret") << kGrant << "\n";
    auto config = std::make_shared<config::Config>();
    config->pty_attaches.push_back(
        config::PtyAttach{.name = "kiro",
                          .url = url,
                          .target = std::get<DialTarget>(parse_dial_target(url)),
                          .secret_file = dir_ / "grant.secret",
                          .computer = "alpha",
                          .tools = config::ToolList{.all = true}});
    audit_.emplace(io_, dir_ / "audit.jsonl");
    // No computer is configured, so the registry opens a program it never runs.
    workers_.emplace(io_, "/bin/true", *audit_);
    state_.emplace(SupervisorState{config, std::make_shared<ClientTable>(config->clients),
                                   *workers_, *audit_, calls_, tasks_, replies_, metrics_});
    dialers_.emplace(io_, *state_, fast_timings());
    dialers_->start();
  }

  ~DialerHarness() {
    dialers_->stop();
    run_for(100ms);
    dialers_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  // Runs the supervisor's loop until `condition` holds or `timeout` passes.
  template <typename Condition>
  bool run_until(Condition condition, std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (!condition()) {
      if (Clock::now() >= deadline) return false;
      io_.restart();
      io_.run_for(10ms);
    }
    return true;
  }

  void run_for(std::chrono::milliseconds duration) {
    run_until([] { return false; }, duration);
  }

  std::string audit_text() const {
    std::ifstream in(dir_ / "audit.jsonl");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

 private:
  boost::asio::io_context io_;
  std::filesystem::path dir_;
  std::optional<AuditLog> audit_;
  std::optional<WorkerRegistry> workers_;
  CallBook calls_;
  TaskBook tasks_;
  ReplyBudget replies_{config::Limits{}.max_reply_buffer_bytes};
  Metrics metrics_;
  std::optional<SupervisorState> state_;
  std::optional<PtyDialers> dialers_;
};

TEST(PtyDialer, BacksOffWithTheInjectedTimings) {
  FakePod pod(FakePodOptions{.secret = std::string(kGrant)});
  pod.refuse_next(502, 3);
  DialerHarness harness(pod.url("laptop"));
  ASSERT_TRUE(harness.run_until([&] { return pod.sessions() == 1; }, 5s));
  const auto dials = pod.dials();
  ASSERT_EQ(dials.size(), 4u);
  // Waits of 50, 100 and 200 ms, each within ±20 %.
  const auto gap = [&](std::size_t i) { return dials[i].at - dials[i - 1].at; };
  EXPECT_GE(gap(1), 40ms);
  EXPECT_GE(gap(2), 80ms);
  EXPECT_GE(gap(3), 160ms);
  EXPECT_LT(gap(1), gap(3));
}

TEST(PtyDialer, PingsAndKeepsAnAnsweringPodPastTheIdleLimit) {
  FakePod pod(FakePodOptions{.secret = std::string(kGrant)});
  DialerHarness harness(pod.url("laptop"));
  ASSERT_TRUE(harness.run_until([&] { return pod.sessions() == 1; }, 5s));
  // The pod's pongs answer the pings; several idle limits pass without a drop.
  ASSERT_TRUE(harness.run_until([&] { return pod.pings_received() >= 10; }, 5s));
  EXPECT_FALSE(pod.session_ended());
  EXPECT_EQ(pod.dial_count(), 1u);
}

TEST(PtyDialer, DropsASilentPodAfterTheIdleLimitAndRedials) {
  FakePod pod(FakePodOptions{.secret = std::string(kGrant), .silent = true});
  DialerHarness harness(pod.url("laptop"));
  ASSERT_TRUE(harness.run_until([&] { return pod.sessions() == 1; }, 5s));
  const auto first = Clock::now();
  ASSERT_TRUE(harness.run_until([&] { return pod.sessions() == 2; }, 5s));
  // Not before the idle limit (150 ms), plus the backoff.
  EXPECT_GE(Clock::now() - first, 150ms);
  const std::string audit = harness.audit_text();
  EXPECT_NE(audit.find(R"("code":null)"), std::string::npos) << audit;
  EXPECT_NE(audit.find(R"("event":"pty_detach")"), std::string::npos) << audit;
}

}  // namespace
}  // namespace sb::supervisor
