// End to end: [[pty_attach]] (docs/protocol.md, "Pod redial"): the redial and stop rules
// for drops, close codes and refused upgrades, the secret file read on every dial, and wss://
// with the pod's certificate verified. Every wait is bounded polling; the "did not redial"
// checks wait kNoRedialWindow.
#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <string>
#include <utility>

#include "harness/test_pki.hpp"
#include "tests/e2e/pods_helpers.hpp"

namespace sbtest {
namespace {

// Sets an environment variable for the switchboard started in its scope (children inherit
// the test's environment at spawn).
class ScopedEnv {
 public:
  ScopedEnv(std::string name, const std::string& value) : name_(std::move(name)) {
    ::setenv(name_.c_str(), value.c_str(), 1);
  }
  ~ScopedEnv() { ::unsetenv(name_.c_str()); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
};

// ---------------------------------------------------------------------------------------
// Redial and stop

TEST_F(PtyAttachE2e, RedialsAfterAPlainDropAndGivesTheShareBack) {
  const auto lent = start_with_held_call();
  ASSERT_FALSE(HasFailure());
  auto& pod = *lent.pod;
  auto& sb = *lent.sb;

  const auto dropped_at = Clock::now();
  pod.drop();
  EXPECT_TRUE(
      sb.audit().wait_for("pty_detach", fields_equal({{"attach", "kiro"}, {"code", nullptr}})));
  ASSERT_TRUE(pod.wait_sessions(2, kDefaultWait)) << "no redial after a drop";
  const auto gap = pod.dials().at(1).at - dropped_at;
  EXPECT_GE(gap, std::chrono::milliseconds(700)) << "redialled without the backoff";
  EXPECT_TRUE(
      sb.audit().wait_for("call", fields_equal({{"principal", "kiro"}, {"outcome", "abandoned"}})));

  // The abandoned call's share came back: the one-call cap has room again.
  EXPECT_EQ(echoed(pod.request(tool_call(2, "echo", json{{"n", 2}}))), json({{"n", 2}}));
  EXPECT_EQ(sb.audit().count("pty_attach_stopped"), 0u);
}

TEST_F(PtyAttachE2e, RedialsOn4006AndStopsOnOther4xxx) {
  FakePod replaced({.secret = grant_});
  FakePod expired({.secret = grant_});
  SwitchboardProcess sb(
      one_computer()
          .block(AttachBlock{
              .name = "replaced", .url = replaced.url("one"), .secret_file = grant_file()}
                     .toml())
          .block(
              AttachBlock{.name = "expired", .url = expired.url("two"), .secret_file = grant_file()}
                  .toml()));
  ASSERT_TRUE(replaced.wait_sessions(1, kDefaultWait)) << sb.stderr_text();
  ASSERT_TRUE(expired.wait_sessions(1, kDefaultWait)) << sb.stderr_text();

  replaced.close(4006);  // the pod runtime was replaced: dial the new one
  expired.close(4001);   // the grant's TTL elapsed: stop
  EXPECT_TRUE(replaced.wait_sessions(2, kDefaultWait)) << "no redial after 4006";
  EXPECT_TRUE(
      sb.audit().wait_for("pty_detach", fields_equal({{"attach", "replaced"}, {"code", 4006}})));
  EXPECT_TRUE(sb.audit().wait_for("pty_attach_stopped",
                                  fields_equal({{"attach", "expired"}, {"code", 4001}})));
  EXPECT_FALSE(expired.wait_dials(2, kNoRedialWindow)) << "redialled after 4001";
  EXPECT_EQ(sb.audit().count("pty_attach_stopped", fields_equal({{"attach", "replaced"}})), 0u);
}

TEST_F(PtyAttachE2e, RedialsFastAfterA502AndSlowlyAfterA401) {
  FakePod proxied({.secret = grant_});
  FakePod unauthorized({.secret = grant_});
  proxied.refuse_next(502);
  unauthorized.refuse_next(401);
  SwitchboardProcess sb(
      one_computer()
          .block(
              AttachBlock{.name = "proxied", .url = proxied.url("one"), .secret_file = grant_file()}
                  .toml())
          .block(AttachBlock{
              .name = "unauthorized", .url = unauthorized.url("two"), .secret_file = grant_file()}
                     .toml()));
  ASSERT_TRUE(proxied.wait_dials(1, kDefaultWait)) << sb.stderr_text();
  ASSERT_TRUE(unauthorized.wait_dials(1, kDefaultWait)) << sb.stderr_text();
  const auto first_dials = Clock::now();

  // 502 is the proxy in front of a restarting pod: the normal backoff (~1 s).
  EXPECT_TRUE(proxied.wait_sessions(1, kNoRedialWindow)) << "no quick redial after a 502";
  EXPECT_EQ(proxied.dials().at(0).status, 502);
  // 401 needs a fresh grant: about a minute, so nothing within the window.
  EXPECT_TRUE(sb.audit().wait_for("pty_attach_refused",
                                  fields_equal({{"attach", "unauthorized"}, {"status", 401}})));
  const auto waited = Clock::now() - first_dials;
  if (waited < kNoRedialWindow) {
    EXPECT_FALSE(unauthorized.wait_dials(
        2, std::chrono::duration_cast<std::chrono::milliseconds>(kNoRedialWindow - waited)))
        << "redialled quickly after a 401";
  }
  EXPECT_EQ(unauthorized.dial_count(), 1u);
  EXPECT_EQ(sb.audit().count("pty_attach_refused", fields_equal({{"attach", "proxied"}})), 0u);
  EXPECT_TRUE(stderr_says(sb, "status=502"));
}

TEST_F(PtyAttachE2e, ReadsTheSecretFileOnEveryDial) {
  FakePod pod({.secret = grant_});
  const fs::path grant = scratch_.path() / "later.secret";  // not there yet
  SwitchboardProcess sb(one_computer().block(
      AttachBlock{.name = "kiro", .url = pod.url("laptop"), .secret_file = grant}.toml()));
  ASSERT_TRUE(stderr_says(sb, "cannot read secret_file")) << sb.stderr_text();
  EXPECT_EQ(pod.dial_count(), 0u);

  write_text(grant, "  " + grant_ + "\r\n\n");
  ASSERT_TRUE(pod.wait_sessions(1, std::chrono::seconds(8))) << sb.stderr_text();
  EXPECT_EQ(pod.dials().back().authorization, "Bearer " + grant_);
}

TEST_F(PtyAttachE2e, DropsThePodSocketOnShutdown) {
  FakePod pod({.secret = grant_});
  SwitchboardProcess sb(one_computer().block(
      AttachBlock{.name = "kiro", .url = pod.url("laptop"), .secret_file = grant_file()}.toml()));
  ASSERT_TRUE(pod.wait_sessions(1, kDefaultWait)) << sb.stderr_text();
  sb.send_signal(SIGTERM);
  EXPECT_TRUE(pod.wait_session_ended(kDefaultWait));
  EXPECT_EQ(sb.wait_exit(kDefaultWait), 0);
  EXPECT_EQ(pod.dial_count(), 1u);
}

// A switch in place (docs/architecture.md, "Switching") drops the pod socket and the new
// process dials it again at once, with no close code and no backoff; the computer lent
// through it stays attached.
TEST_F(PtyAttachE2e, ASwitchInPlaceDialsThePodAgainAtOnce) {
  Lent lent = lend_alpha({});
  ASSERT_FALSE(HasFailure());
  lent.sb->send_signal(SIGUSR2);
  ASSERT_TRUE(lent.sb->audit().wait_for("service_restarted")) << lent.sb->diagnostics();
  ASSERT_TRUE(lent.pod->wait_sessions(2, kDefaultWait)) << lent.sb->stderr_text();
  // Dialled as at a start, not redialled after a drop (which waits out a backoff).
  EXPECT_EQ(lent.sb->stderr_text().find("redialling"), std::string::npos) << lent.sb->stderr_text();
  EXPECT_EQ(lent.pod->dial_count(), 2u);
  EXPECT_EQ(echoed(lent.pod->request(tool_call(1, "echo", json{{"after", "switch"}}))),
            json({{"after", "switch"}}));
  EXPECT_FALSE(lent.computer->closed());
}

// ---------------------------------------------------------------------------------------
// wss://

TEST_F(PtyAttachE2e, DialsWssAndVerifiesTheCertificate) {
  const TestPki pki = make_test_pki(scratch_.path(), "DNS:localhost");
  FakePod pod(
      {.secret = grant_,
       .tls = PodTls{.certificate_chain = pki.server_certificate, .private_key = pki.server_key}});
  const ScopedEnv trust("SSL_CERT_FILE", pki.ca_certificate.string());
  SwitchboardProcess sb(one_computer().block(AttachBlock{
      .name = "kiro", .url = pod.url("laptop", "localhost"), .secret_file = grant_file()}
                                                 .toml()));
  const auto computer = attach_ready(sb, alpha_, "alpha", owner_.secret);
  ASSERT_TRUE(computer);
  ASSERT_TRUE(pod.wait_sessions(1, kDefaultWait)) << sb.stderr_text();
  EXPECT_EQ(pod.dials().at(0).authorization, "Bearer " + grant_);
  EXPECT_EQ(echoed(pod.request(tool_call(1, "echo", json{{"over", "tls"}}))),
            json({{"over", "tls"}}));
}

TEST_F(PtyAttachE2e, RefusesAPodCertificateThatIsUntrustedOrForAnotherName) {
  // Trusted CA, but the certificate names localhost and the URL says 127.0.0.1.
  const fs::path trusted_dir = scratch_.path() / "trusted";
  const fs::path other_dir = scratch_.path() / "other";
  fs::create_directories(trusted_dir);
  fs::create_directories(other_dir);
  const TestPki trusted = make_test_pki(trusted_dir, "DNS:localhost");
  const TestPki untrusted = make_test_pki(other_dir, "DNS:localhost,IP:127.0.0.1");
  FakePod wrong_name({.secret = grant_,
                      .tls = PodTls{.certificate_chain = trusted.server_certificate,
                                    .private_key = trusted.server_key}});
  FakePod unknown_ca({.secret = grant_,
                      .tls = PodTls{.certificate_chain = untrusted.server_certificate,
                                    .private_key = untrusted.server_key}});
  const ScopedEnv trust("SSL_CERT_FILE", trusted.ca_certificate.string());
  SwitchboardProcess sb(one_computer()
                            .block(AttachBlock{.name = "wrong-name",
                                               .url = wrong_name.url("one", "127.0.0.1"),
                                               .secret_file = grant_file()}
                                       .toml())
                            .block(AttachBlock{.name = "unknown-ca",
                                               .url = unknown_ca.url("two", "localhost"),
                                               .secret_file = grant_file()}
                                       .toml()));
  EXPECT_TRUE(wrong_name.wait_tls_failures(1, kDefaultWait)) << sb.stderr_text();
  EXPECT_TRUE(unknown_ca.wait_tls_failures(1, kDefaultWait)) << sb.stderr_text();
  EXPECT_TRUE(stderr_says(sb, "attach=wrong-name error=TLS with 127.0.0.1"));
  EXPECT_TRUE(stderr_says(sb, "attach=unknown-ca error=TLS with localhost"));
  EXPECT_EQ(wrong_name.dial_count(), 0u);
  EXPECT_EQ(unknown_ca.dial_count(), 0u);
  EXPECT_EQ(sb.audit().count("pty_attach"), 0u);
}

}  // namespace
}  // namespace sbtest
