// The [[pty_attach]] dialer in process, with short timings injected (PodTimings), against
// a fake pod: the redial loop's backoff, the keepalive pings and the idle limit
// (docs/protocol.md, "Pod sockets", "Pod redial"), which the end-to-end tests cannot reach
// with the real 20 s / 70 s / 60 s values.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <fstream>

#include "harness/fake_pod.hpp"
#include "supervisor/pods/pod_dialer.hpp"
#include "tests/support/services_without_workers.hpp"

namespace sb::supervisor {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using harness::FakePod;
using harness::FakePodOptions;

constexpr std::string_view kGrant = "0123456789abcdef0123456789abcdef";

PodTimings fast_timings() {
  return PodTimings{.first_backoff = 50ms,
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
    config->pods.push_back(config::Pod{.name = "kiro",
                                       .url = url,
                                       .target = std::get<DialTarget>(parse_dial_target(url)),
                                       .secret_file = dir_ / "grant.secret",
                                       .computer = "alpha",
                                       .tools = config::NameList{.all = true}});
    config_ = config;
    parts_.emplace(io_, dir_ / "audit.jsonl");
    dialers_.emplace(io_, config_, parts_->services, no_tracer_, fast_timings());
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
  std::shared_ptr<const config::Config> config_;
  std::optional<ServicesWithoutWorkers> parts_;
  std::shared_ptr<Tracer> no_tracer_;
  std::optional<PodDialers> dialers_;
};

TEST(PodDialer, BacksOffWithTheInjectedTimings) {
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

TEST(PodDialer, PingsAndKeepsAnAnsweringPodPastTheIdleLimit) {
  FakePod pod(FakePodOptions{.secret = std::string(kGrant)});
  DialerHarness harness(pod.url("laptop"));
  ASSERT_TRUE(harness.run_until([&] { return pod.sessions() == 1; }, 5s));
  // The pod's pongs answer the pings; several idle limits pass without a drop.
  ASSERT_TRUE(harness.run_until([&] { return pod.pings_received() >= 10; }, 5s));
  EXPECT_FALSE(pod.session_ended());
  EXPECT_EQ(pod.dial_count(), 1u);
}

TEST(PodDialer, DropsASilentPodAfterTheIdleLimitAndRedials) {
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
