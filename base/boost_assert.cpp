// Boost's assertions, reported and fatal as the standard assert is, but for one that Boost
// 1.81's Beast makes wrongly. Only builds without NDEBUG (the sanitized build, a developer's
// Debug build) check Boost's assertions at all: the top CMakeLists.txt defines
// BOOST_ENABLE_ASSERT_DEBUG_HANDLER in those builds, which routes them here.
//
// Beast's request parser asserts that a final chunk it has begun to read ("0\r\n") comes
// back with at least five bytes, when a reader that was asked for more may rightly hand it
// just one more: a caller whose chunked body ends in small pieces would stop the process.
// What follows the assertion handles the short input correctly, which is what a release
// build runs; Beast corrected the assertion after 1.81 (boostorg/beast pull request 2861).
#include <boost/assert.hpp>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace {

bool is_beasts_short_final_chunk(std::string_view expression, std::string_view file) {
  return expression == "n >= 5" && file.ends_with("boost/beast/http/impl/basic_parser.ipp");
}

[[noreturn]] void fail(const char* expression, const char* message, const char* function,
                       const char* file, long line) {
  std::fprintf(stderr, "%s:%ld: %s: Boost assertion `%s' failed%s%s\n", file, line, function,
               expression, message ? ": " : "", message ? message : "");
  std::abort();
}

}  // namespace

namespace boost {

void assertion_failed(const char* expression, const char* function, const char* file, long line) {
  if (is_beasts_short_final_chunk(expression, file)) return;
  fail(expression, nullptr, function, file, line);
}

void assertion_failed_msg(const char* expression, const char* message, const char* function,
                          const char* file, long line) {
  fail(expression, message, function, file, line);
}

}  // namespace boost
