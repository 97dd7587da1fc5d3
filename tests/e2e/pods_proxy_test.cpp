// End to end: [[pty_attach]] through an HTTP proxy (docs/configuration.md, "Pod attaches"):
// a block's `proxy` (tinyproxy, with Basic credentials from a file) carries the dial to the
// pod, and the service's own proxy environment is used only by a block that says
// proxy = "environment" (a pod reached at this machine's outward address, so that the
// environment's proxy would apply to it). tinyproxy and haproxy are required under
// SWITCHBOARD_REQUIRE_TINYPROXY (CI), where skipping would hide the tests.
#include <gtest/gtest.h>

#include "harness/haproxy_front.hpp"
#include "harness/proxies.hpp"
#include "tests/e2e/pods_helpers.hpp"

namespace sbtest {
namespace {

class PtyAttachThroughProxy : public PtyAttachE2e {
 protected:
  void SetUp() override {
    tinyproxy_ = harness::TinyProxy::find();
    haproxy_ = harness::HaproxyFront::find();
    if (tinyproxy_ && haproxy_) return;
    if (std::getenv("SWITCHBOARD_REQUIRE_TINYPROXY"))
      FAIL() << "tinyproxy or haproxy is not installed and SWITCHBOARD_REQUIRE_TINYPROXY is set";
    GTEST_SKIP() << "tinyproxy or haproxy is not installed (Debian: tinyproxy, haproxy)";
  }

  std::optional<fs::path> tinyproxy_;
  std::optional<fs::path> haproxy_;
};

TEST_F(PtyAttachThroughProxy, TheBlocksProxyCarriesTheDialWithItsCredentials) {
  FakePod pod({.secret = grant_});
  harness::TinyProxy proxy(*tinyproxy_, pod.port(), "pods:s3cret");
  const fs::path credentials = scratch_.path() / "proxy.credentials";
  write_text(credentials, "pods:s3cret\n");
  SwitchboardProcess sb(one_computer().block(
      AttachBlock{.name = "kiro",
                  .url = pod.url("laptop"),
                  .secret_file = grant_file(),
                  .more = "proxy = " + json(proxy.url()).dump() +
                          "\nproxy_credentials_file = " + json(credentials.string()).dump() + "\n"}
          .toml()));
  const auto computer = attach_ready(sb, alpha_, "alpha", owner_.secret);
  ASSERT_TRUE(computer);
  ASSERT_TRUE(pod.wait_sessions(1, kDefaultWait)) << sb.stderr_text() << proxy.log();
  EXPECT_EQ(pod.dials().at(0).authorization, "Bearer " + grant_);
  EXPECT_EQ(echoed(pod.request(tool_call(1, "echo", json{{"via", "proxy"}}))),
            json({{"via", "proxy"}}));
  EXPECT_NE(proxy.log().find("127.0.0.1:" + std::to_string(pod.port())), std::string::npos)
      << "the proxy carried the dial: " << proxy.log();
  EXPECT_EQ(sb.stderr_text().find("s3cret"), std::string::npos) << "credentials are never logged";
}

TEST_F(PtyAttachThroughProxy, TheServicesEnvironmentIsUsedOnlyWhenTheBlockSaysSo) {
  const auto address = harness::outward_address();
  if (!address) GTEST_SKIP() << "this machine has no address that is not loopback";
  FakePod direct_pod({.secret = grant_});
  FakePod environment_pod({.secret = grant_});
  harness::TcpForward to_direct(*haproxy_, *address, direct_pod.port());
  harness::TcpForward to_environment(*haproxy_, *address, environment_pod.port());
  const int dead = free_port();
  const harness::ScopedEnv proxy("http_proxy", "http://127.0.0.1:" + std::to_string(dead));
  const auto url = [&](const harness::TcpForward& forward) {
    return "ws://" + *address + ":" + std::to_string(forward.port()) + "/tools/attach/laptop";
  };
  SwitchboardProcess sb(one_computer()
                            .block(AttachBlock{.name = "direct",
                                               .url = url(to_direct),
                                               .secret_file = grant_file(),
                                               .more = "allow_insecure_transport = true\n"}
                                       .toml())
                            .block(AttachBlock{.name = "from-environment",
                                               .url = url(to_environment),
                                               .secret_file = grant_file(),
                                               .more = "allow_insecure_transport = true\n"
                                                       "proxy = \"environment\"\n"}
                                       .toml()));
  EXPECT_TRUE(direct_pod.wait_sessions(1, kDefaultWait))
      << "a block without `proxy` dials directly whatever the environment says: "
      << sb.stderr_text();
  EXPECT_TRUE(stderr_says(sb, "connecting to 127.0.0.1:" + std::to_string(dead)))
      << "proxy = \"environment\" takes the service's: " << sb.stderr_text();
  EXPECT_EQ(environment_pod.dial_count(), 0u);
}

}  // namespace
}  // namespace sbtest
