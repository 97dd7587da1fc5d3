// The text helpers every part shares: here, `*` patterns (glob_matches), which grant
// resources by URI (docs/configuration.md, "Clients"), and strict Base64, which an
// Mcp-Param header may carry (docs/protocol.md, "Revisions").
#include "shared/text.hpp"

#include <gtest/gtest.h>

#include <string>

namespace sb {
namespace {

TEST(GlobIncludes, APatternIncludesWhatEveryTextOfTheNarrowerOneMatches) {
  EXPECT_TRUE(glob_includes("*", "anything*at/all*"));
  EXPECT_TRUE(glob_includes("demo://resource/*", "demo://resource/dynamic/text/*"));
  EXPECT_TRUE(glob_includes("demo://*/text/*", "demo://resource/dynamic/text/*"));
  EXPECT_TRUE(glob_includes("a*b", "a*b"));
  EXPECT_TRUE(glob_includes("a*", "a**"));
  EXPECT_TRUE(glob_includes("file:///x.md", "file:///x.md"));
  // Each of these leaves out some text the narrower one matches.
  EXPECT_FALSE(glob_includes("demo://resource/dynamic/text/a*", "demo://resource/dynamic/text/*"));
  EXPECT_FALSE(glob_includes("demo://resource/*.md", "demo://resource/*"));
  EXPECT_FALSE(glob_includes("a*b*c", "a*c"));
  EXPECT_FALSE(glob_includes("file:///x.md", "file:///*.md"));
  EXPECT_FALSE(glob_includes("a?b", "a*b")) << "only a star stands for a run";
  EXPECT_FALSE(glob_includes(std::string_view("a\0b", 3), "a*b"));
}

TEST(GlobMatches, AStarStandsForAnyRunOfCharactersNoneIncluded) {
  EXPECT_TRUE(glob_matches("*", ""));
  EXPECT_TRUE(glob_matches("*", "anything://at/all"));
  EXPECT_TRUE(glob_matches("file:///srv/*", "file:///srv/"));
  EXPECT_TRUE(glob_matches("file:///srv/*", "file:///srv/a/b/c.md"));
  EXPECT_TRUE(glob_matches("file:///*/b.md", "file:///a/x/b.md"));
  EXPECT_TRUE(glob_matches("*.md", "notes.md.md"));
  EXPECT_TRUE(glob_matches("a**b", "ab"));
  EXPECT_FALSE(glob_matches("file:///srv/*", "file:///srv"));
  EXPECT_FALSE(glob_matches("*.md", "notes.mdx"));
}

TEST(GlobMatches, EveryOtherByteStandsForItself) {
  EXPECT_TRUE(glob_matches("test://static", "test://static"));
  EXPECT_FALSE(glob_matches("test://static", "test://static/"));
  EXPECT_FALSE(glob_matches("test://static", "TEST://static"));
  EXPECT_FALSE(glob_matches("test://?tatic", "test://static"));
  EXPECT_FALSE(glob_matches("", "x"));
  EXPECT_TRUE(glob_matches("", ""));
}

TEST(GlobMatches, ManyStarsAgainstALongMissFinish) {
  // A pattern that backtracks at every star: a naive recursion would take exponential
  // time here, this one the product of the sizes.
  const std::string text(100000, 'a');
  EXPECT_FALSE(glob_matches("*a*a*a*a*a*a*a*a*b", text));
  EXPECT_TRUE(glob_matches("*a*a*a*a*a*a*a*a*", text));
}

}  // namespace
TEST(DecodeBase64, ReadsStandardBase64Strictly) {
  EXPECT_EQ(decode_base64("SGVsbG8="), "Hello");
  EXPECT_EQ(decode_base64("WsO8cmljaA=="), "Z\xc3\xbcrich");
  EXPECT_EQ(decode_base64(""), "");
  EXPECT_EQ(decode_base64("AAAA"), std::string(3, '\0'));
  for (const char* bad : {"SGVsbG8", "SGVs!!!bG8=", "SGVsbG9=", "S=VsbG8=", "SGVsbG8==", "SG-_",
                          "SGVsbG8=\n", "===="})
    EXPECT_FALSE(decode_base64(bad)) << bad;
}

}  // namespace sb
