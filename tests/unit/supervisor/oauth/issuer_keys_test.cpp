// An issuer's keys (supervisor/oauth/issuer_keys.hpp) fetched from a key set served on
// loopback: read when it holds keys; a malformed or oversized set gives none; a flood of
// tokens naming unknown keys fetches the set once per refetch interval, not once per token.
#include "supervisor/oauth/issuer_keys.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "harness/fixed_http_origin.hpp"
#include "harness/signing_key.hpp"

namespace sb::supervisor::oauth {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;

constexpr auto kRefetch = 200ms;

// Runs `io` until `condition` holds or five seconds pass; whether it held.
template <typename Condition>
bool run_until(boost::asio::io_context& io, Condition condition) {
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!condition() && std::chrono::steady_clock::now() < deadline) {
    io.restart();
    io.run_for(10ms);
  }
  return condition();
}

// Runs `io` for `how_long`: what a well-behaved fetcher does in that time is nothing.
void run_for(boost::asio::io_context& io, std::chrono::milliseconds how_long) {
  io.restart();
  io.run_for(how_long);
}

std::shared_ptr<IssuerKeys> keys_from(boost::asio::io_context& io, OutboundClient& client,
                                      const harness::FixedHttpOrigin& origin) {
  config::OAuthIssuer issuer{.issuer = origin.url(""), .jwks_url = origin.url("/jwks")};
  auto keys = std::make_shared<IssuerKeys>(io, client, issuer, kRefetch);
  keys->start();
  return keys;
}

std::string key_set() {
  const auto key = harness::make_signing_key("ES256", "k1");
  return json{{"keys", json::array({key.jwk()})}}.dump();
}

TEST(IssuerKeys, AFloodOfUnknownKeysFetchesTheSetOncePerInterval) {
  boost::asio::io_context io;
  OutboundClient client(io, nullptr);
  const harness::FixedHttpOrigin origin(key_set());
  const auto keys = keys_from(io, client, origin);
  ASSERT_TRUE(run_until(io, [&] { return keys->keys().size() == 1; }));
  EXPECT_EQ(origin.answered(), 1);
  // Within the interval of the last fetch, unknown keys fetch nothing.
  for (int i = 0; i < 1000; ++i) keys->key_unknown();
  run_for(io, kRefetch / 2);
  EXPECT_EQ(origin.answered(), 1);
  // Past it, a thousand unknown keys fetch the set once.
  run_for(io, kRefetch);
  for (int i = 0; i < 1000; ++i) keys->key_unknown();
  ASSERT_TRUE(run_until(io, [&] { return origin.answered() == 2; }));
  run_for(io, kRefetch / 2);
  EXPECT_EQ(origin.answered(), 2);
  keys->stop();
  run_for(io, 10ms);
}

TEST(IssuerKeys, AMalformedOrOversizedSetGivesNoKeys) {
  for (const std::string& body :
       {std::string("not json"), std::string(R"({"keys":"none"})"),
        R"({"keys":[],"pad":")" + std::string(2 * 1024 * 1024, 'x') + R"("})"}) {
    boost::asio::io_context io;
    OutboundClient client(io, nullptr);
    const harness::FixedHttpOrigin origin(body);
    const auto keys = keys_from(io, client, origin);
    // The server has answered (or been hung up on past the size bound) and the fetch ended.
    run_for(io, 300ms);
    EXPECT_TRUE(keys->keys().empty()) << body.substr(0, 40);
    keys->stop();
    run_for(io, 10ms);
  }
}

}  // namespace
}  // namespace sb::supervisor::oauth
