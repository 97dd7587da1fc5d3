// Verifiers and bearer parsing (docs/protocol.md, "Authentication").
#include "shared/verifier.hpp"

#include <gtest/gtest.h>

#include <cctype>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using sb::parse_bearer;
using sb::parse_verifier;
using sb::render_verifier;
using sb::verifier_of;

// sha256("abc"), the FIPS 180-2 test vector.
constexpr const char* kAbcHex = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

std::string parse_error_of(std::string_view text) {
  try {
    parse_verifier(text);
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  ADD_FAILURE() << "parse_verifier accepted " << text;
  return {};
}

testing::AssertionResult Contains(const std::string& haystack, std::string_view needle) {
  if (haystack.find(needle) != std::string::npos) return testing::AssertionSuccess();
  return testing::AssertionFailure()
         << "\"" << haystack << "\" does not contain \"" << needle << "\"";
}

// --- bearer parsing -------------------------------------------------------------------

TEST(Bearer, SpecExamples) {
  EXPECT_EQ(parse_bearer("Bearer abc"), "abc");
  EXPECT_EQ(parse_bearer("bearer  abc "), "abc");
  EXPECT_EQ(parse_bearer("Basic abc"), std::nullopt);
  EXPECT_EQ(parse_bearer("Bearer "), std::nullopt);
  EXPECT_EQ(parse_bearer("Bearer"), std::nullopt);
}

TEST(Bearer, SchemeIsCaseInsensitive) {
  EXPECT_EQ(parse_bearer("BEARER abc"), "abc");
  EXPECT_EQ(parse_bearer("bEaReR abc"), "abc");
}

TEST(Bearer, WholeValueIsTrimmedFirst) {
  EXPECT_EQ(parse_bearer("  Bearer abc  "), "abc");
}

TEST(Bearer, TabDoesNotSplit) {
  EXPECT_EQ(parse_bearer("Bearer\tabc"), std::nullopt);
  // A tab is visible ASCII for header values: kept inside, trimmed at the ends.
  EXPECT_EQ(parse_bearer("Bearer abc\t"), "abc");
  EXPECT_EQ(parse_bearer("Bearer a\tb"), "a\tb");
}

TEST(Bearer, SplitsAtTheFirstSpaceOnly) {
  EXPECT_EQ(parse_bearer("Bearer a b"), "a b");
}

TEST(Bearer, NonVisibleAsciiCarriesNoToken) {
  EXPECT_EQ(parse_bearer("Bearer ab\x01"
                         "c"),
            std::nullopt);
  EXPECT_EQ(parse_bearer("Bearer abc\x7f"), std::nullopt);
  EXPECT_EQ(parse_bearer("Bearer ab\xc3\xa7"), std::nullopt);  // UTF-8 "abç"
  EXPECT_EQ(parse_bearer("Bearer abc\r\n"), std::nullopt);
}

// --- verifier format ------------------------------------------------------------------

TEST(Verifier, OfIsSha256OfTheExactBytes) {
  EXPECT_EQ(render_verifier(verifier_of("abc")), std::string("sha256:") + kAbcHex);
  EXPECT_NE(verifier_of("abc"), verifier_of("abc "));
}

TEST(Verifier, ParsesAndRendersLowercase) {
  const auto parsed = parse_verifier(std::string("sha256:") + kAbcHex);
  EXPECT_EQ(parsed, verifier_of("abc"));
  EXPECT_EQ(render_verifier(parsed), std::string("sha256:") + kAbcHex);
}

TEST(Verifier, UppercaseHexIsAcceptedAndRenderedLowercase) {
  std::string upper = kAbcHex;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const auto parsed = parse_verifier("sha256:" + upper);
  EXPECT_EQ(parsed, verifier_of("abc"));
  EXPECT_EQ(render_verifier(parsed), std::string("sha256:") + kAbcHex);
}

TEST(Verifier, SurroundingWhitespaceIsTrimmed) {
  EXPECT_EQ(parse_verifier(std::string("  sha256:") + kAbcHex + "\n"), verifier_of("abc"));
}

TEST(Verifier, MissingPrefixIsRefused) {
  const std::string error = parse_error_of(kAbcHex);
  EXPECT_TRUE(Contains(error, "must start with `sha256:`"));
  EXPECT_TRUE(Contains(error, "switchboard hash"));
  EXPECT_FALSE(Contains(error, "openab-sb"));
  // The prefix is case-sensitive.
  EXPECT_TRUE(Contains(parse_error_of(std::string("SHA256:") + kAbcHex), "sha256:"));
}

TEST(Verifier, NotHexIsRefused) {
  std::string bad = kAbcHex;
  bad[10] = 'g';
  EXPECT_TRUE(Contains(parse_error_of("sha256:" + bad), "not hex"));
}

TEST(Verifier, OddLengthIsNotHex) {
  EXPECT_TRUE(Contains(parse_error_of(std::string("sha256:") + kAbcHex + "a"), "not hex"));
}

TEST(Verifier, WrongLengthIsRefused) {
  const std::string short_hex = std::string(kAbcHex).substr(0, 62);
  EXPECT_TRUE(Contains(parse_error_of("sha256:" + short_hex), "32 bytes (64 hex chars)"));
  EXPECT_TRUE(Contains(parse_error_of(std::string("sha256:") + kAbcHex + "00"), "32 bytes"));
  EXPECT_TRUE(Contains(parse_error_of("sha256:"), "32 bytes"));
}

// --- lookup ---------------------------------------------------------------------------

TEST(FindVerifier, ReturnsTheFirstMatch) {
  const std::vector<sb::Verifier> entries{verifier_of("a"), verifier_of("b"), verifier_of("b")};
  EXPECT_EQ(sb::find_verifier(entries, verifier_of("a")), 0u);
  EXPECT_EQ(sb::find_verifier(entries, verifier_of("b")), 1u);
}

TEST(FindVerifier, ReturnsNulloptWhenNoneMatches) {
  const std::vector<sb::Verifier> entries{verifier_of("a"), verifier_of("b")};
  EXPECT_EQ(sb::find_verifier(entries, verifier_of("c")), std::nullopt);
  EXPECT_EQ(sb::find_verifier({}, verifier_of("c")), std::nullopt);
}

TEST(SameDigest, ComparesAllBytes) {
  EXPECT_TRUE(sb::same_digest(verifier_of("x"), verifier_of("x")));
  auto other = verifier_of("x");
  other.digest.back() ^= 1;
  EXPECT_FALSE(sb::same_digest(verifier_of("x"), other));
}

// --- generated secrets ----------------------------------------------------------------

TEST(GenerateSecret, Is64LowercaseHexAndFresh) {
  std::set<std::string> seen;
  for (int i = 0; i < 4; ++i) {
    const std::string secret = sb::generate_secret();
    ASSERT_EQ(secret.size(), 64u);
    for (const char c : secret) EXPECT_TRUE((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'));
    seen.insert(secret);
  }
  EXPECT_EQ(seen.size(), 4u);
}

}  // namespace
