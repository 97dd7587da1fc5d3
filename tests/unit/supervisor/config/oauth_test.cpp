// [oauth] and the clients that sign in with it (docs/auth.md, "Configuration"): the public
// URL, the issuers and their algorithms, and each client's OAuth identity, every mistake
// refused with what to write instead.
#include <gtest/gtest.h>

#include <string>

#include "supervisor/config/config.hpp"
#include "tests/unit/supervisor/config/config_test_support.hpp"

namespace sb::config::test {
namespace {

const std::string kOAuth = R"(
[oauth]
resource = "https://sb.example.net"
scopes = ["mcp"]
[[oauth.issuer]]
issuer = "https://idp.example.net"
)";

const std::string kAgent = R"(
[[client]]
name = "agent"
oauth_identity = "agent-7"
computers = { macmini = ["echo"] }
)";

TEST(ConfigOAuth, AnIssuerAndAClientThatSignsInWithIt) {
  const Config config = parse(kMacmini + kOAuth + kAgent);
  ASSERT_TRUE(config.oauth);
  EXPECT_EQ(config.oauth->resource, "https://sb.example.net");
  EXPECT_EQ(config.oauth->scopes, std::vector<std::string>{"mcp"});
  ASSERT_EQ(config.oauth->issuers.size(), 1u);
  const OAuthIssuer& issuer = config.oauth->issuers[0];
  EXPECT_EQ(issuer.algorithms, (std::vector<std::string>{"RS256", "PS256", "ES256", "EdDSA"}));
  EXPECT_EQ(issuer.clock_skew_secs, 60);
  EXPECT_EQ(issuer.identity_claim, "sub");
  EXPECT_EQ(issuer.jwks_url, "");
  ASSERT_EQ(config.clients.size(), 1u);
  EXPECT_FALSE(config.clients[0].token) << "no static token";
  EXPECT_EQ(config.clients[0].oauth_issuer, "https://idp.example.net");
  EXPECT_EQ(config.clients[0].oauth_identity, "agent-7");
}

TEST(ConfigOAuth, AnIssuersSettingsAreChecked) {
  const auto with_issuer = [](const std::string& lines) {
    return error_of(kMacmini +
                    "[oauth]\nresource = \"https://sb.example.net\"\n[[oauth.issuer]]\n" + lines);
  };
  EXPECT_TRUE(
      Contains(with_issuer("issuer = \"http://idp.example.net\"\n"), "is not an https:// URL"));
  EXPECT_NO_THROW(parse(kMacmini + kAgent +
                        "[oauth]\nresource = \"http://127.0.0.1:8790\"\n"
                        "[[oauth.issuer]]\nissuer = \"http://localhost:3000\"\n"));
  EXPECT_TRUE(
      Contains(with_issuer("issuer = \"https://idp.example.net\"\nalgorithms = [\"HS256\"]\n"),
               "the accepted ones are RS256, PS256, ES256 and EdDSA (never none or HMAC)"));
  EXPECT_TRUE(
      Contains(with_issuer("issuer = \"https://idp.example.net\"\nclock_skew_secs = 3600\n"),
               "`clock_skew_secs` must be between 0 and 600"));
  EXPECT_TRUE(
      Contains(with_issuer("issuer = \"https://idp.example.net\"\nidentity_claim = \"a b\"\n"),
               "`identity_claim` must be a claim's name"));
  EXPECT_TRUE(Contains(with_issuer("issuer = \"https://idp.example.net\"\nextra = 1\n"), "extra"));
  EXPECT_TRUE(Contains(with_issuer("issuer = \"https://idp.example.net\"\n"
                                   "introspection_url = \"https://idp.example.net/introspect\"\n"),
                       "`introspection_url` and `introspection_credentials_file` go together"));
  const Config introspecting =
      parse(kMacmini + kAgent +
            "[oauth]\nresource = \"https://sb.example.net\"\n[[oauth.issuer]]\n"
            "issuer = \"https://idp.example.net\"\n"
            "introspection_url = \"https://idp.example.net/introspect\"\n"
            "introspection_credentials_file = \"~/idp-client\"\n");
  EXPECT_EQ(introspecting.oauth->issuers[0].introspection_url,
            "https://idp.example.net/introspect");
  EXPECT_EQ(introspecting.oauth->issuers[0].introspection_credentials_file,
            std::filesystem::path("/home/u/idp-client"));
  EXPECT_TRUE(Contains(error_of(kMacmini + "[oauth]\nresource = \"https://sb.example.net\"\n"),
                       "no [[oauth.issuer]]"));
  EXPECT_TRUE(Contains(error_of(kMacmini + "[oauth]\nresource = \"https://sb.example.net/?a\"\n"
                                           "[[oauth.issuer]]\nissuer = \"https://i.example\"\n"),
                       "needs a host, and no query or fragment"));
}

TEST(ConfigOAuth, AClientsSignInIsChecked) {
  EXPECT_TRUE(Contains(error_of(kMacmini + kAgent), "`oauth_identity` needs an [oauth] section"));
  EXPECT_TRUE(
      Contains(error_of(kMacmini + kOAuth +
                        "[[client]]\nname = \"nobody\"\ncomputers = { macmini = [\"a\"] }\n"),
               "no way to sign in"));
  EXPECT_TRUE(Contains(error_of(kMacmini + kOAuth + kAgent +
                                "[[client]]\nname = \"twin\"\noauth_identity = \"agent-7\"\n"
                                "computers = { macmini = [\"a\"] }\n"),
                       "the same OAuth identity is [[client]] \"agent\"'s"));
  EXPECT_TRUE(Contains(
      error_of(kMacmini + kOAuth +
               "[[client]]\nname = \"a\"\noauth_identity = \"x\"\n"
               "oauth_issuer = \"https://other.example\"\ncomputers = { macmini = [\"a\"] }\n"),
      "is not an [[oauth.issuer]]"));
  const std::string two_issuers =
      kOAuth + "[[oauth.issuer]]\nissuer = \"https://second.example\"\n";
  EXPECT_TRUE(Contains(error_of(kMacmini + two_issuers + kAgent), "`oauth_issuer` is needed"));
  // Both ways at once: a static token and an OAuth identity.
  const Config both = parse(kMacmini + kOAuth +
                            client("both", "@T1@",
                                   "oauth_identity = \"b\"\n"
                                   "computers = { macmini = [\"a\"] }"));
  EXPECT_TRUE(both.clients[0].token);
  EXPECT_EQ(both.clients[0].oauth_identity, "b");
}

}  // namespace
}  // namespace sb::config::test
