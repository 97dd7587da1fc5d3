// Text written as a JSON string (shared/json_string.hpp): escapes as RFC 8259 has them,
// well-formed UTF-8 kept, and each ill-formed part replaced with one U+FFFD.
#include "shared/json_string.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace sb {
namespace {

std::string written(std::string_view text) {
  std::string out;
  append_json_string(out, text);
  return out;
}

TEST(JsonString, EscapesQuotesBackslashesAndControls) {
  EXPECT_EQ(written("plain / text"), R"("plain / text")");
  EXPECT_EQ(written("a\"b\\c"), R"("a\"b\\c")");
  EXPECT_EQ(written("\b\f\n\r\t"), R"("\b\f\n\r\t")");
  EXPECT_EQ(written(std::string_view("\0\x1f\x7f", 3)), "\"\\u0000\\u001f\x7f\"");
  EXPECT_EQ(nlohmann::json::parse(written("tab\there")), "tab\there");
}

TEST(JsonString, KeepsUtf8AndReplacesWhatIsNot) {
  const std::string kept = "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80";
  EXPECT_EQ(written(kept), '"' + kept + '"');
  const std::string replacement = "\xef\xbf\xbd";
  EXPECT_EQ(written("\xff\xfe"), '"' + replacement + replacement + '"');
  // A sequence cut short is one replacement; a byte that cannot continue it is its own.
  EXPECT_EQ(written("\xe2\x82!"), '"' + replacement + "!\"");
  EXPECT_EQ(written("\xc0\xaf"), '"' + replacement + replacement + '"') << "overlong";
  EXPECT_EQ(written("\xed\xa0\x80"), '"' + replacement + replacement + replacement + '"')
      << "a surrogate";
  EXPECT_EQ(written("\xf4\x90\x80\x80"),
            '"' + replacement + replacement + replacement + replacement + '"')
      << "past U+10FFFF";
  EXPECT_EQ(written("end\xc3"), "\"end" + replacement + '"');
}

}  // namespace
}  // namespace sb
