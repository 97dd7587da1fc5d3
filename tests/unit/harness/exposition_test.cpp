// The harness's exposition-format reader (harness/exposition.hpp) is itself held to what
// it must refuse: a lenient reader would let a broken /metrics pass the end-to-end tests.
#include "harness/exposition.hpp"

#include <gtest/gtest.h>

namespace harness {
namespace {

constexpr std::string_view kGood =
    "# HELP requests_total Requests.\n"
    "# TYPE requests_total counter\n"
    "requests_total{route=\"a\\\"b\"} 3\n"
    "requests_total{route=\"c\"} 4\n"
    "# HELP latency_seconds Latency.\n"
    "# TYPE latency_seconds histogram\n"
    "latency_seconds_bucket{le=\"0.1\"} 1\n"
    "latency_seconds_bucket{le=\"1\"} 2\n"
    "latency_seconds_bucket{le=\"+Inf\"} 2\n"
    "latency_seconds_sum 0.6\n"
    "latency_seconds_count 2\n"
    "# HELP up Up.\n"
    "# TYPE up gauge\n"
    "up 1\n";

TEST(Exposition, ReadsCountersHistogramsAndGauges) {
  const Exposition exposition = parse_exposition(kGood);
  ASSERT_EQ(exposition.families.size(), 3u);
  EXPECT_EQ(sample_value(exposition, "requests_total", {{"route", "a\"b"}}), 3);
  EXPECT_EQ(sum_of(exposition, "requests_total"), 7);
  EXPECT_EQ(sample_value(exposition, "latency_seconds_bucket", {{"le", "1"}}), 2);
  EXPECT_EQ(sample_value(exposition, "up"), 1);
  EXPECT_EQ(sample_value(exposition, "down"), std::nullopt);
  EXPECT_THROW(sample_value(exposition, "requests_total"), std::runtime_error);
}

std::string replaced(std::string_view from, std::string_view what, std::string_view with) {
  std::string text(from);
  const auto at = text.find(what);
  EXPECT_NE(at, std::string::npos) << what;
  return text.replace(at, what.size(), with);
}

TEST(Exposition, RefusesWhatPrometheusWouldNotIngestOrTheProjectForbids) {
  const std::vector<std::pair<std::string, std::string>> broken{
      {"no final newline", std::string(kGood.substr(0, kGood.size() - 1))},
      {"blank line", replaced(kGood, "# HELP up", "\n# HELP up")},
      {"sample before its TYPE",
       replaced(kGood, "# TYPE up gauge\nup 1\n", "up 1\n# TYPE up gauge\n")},
      {"counter not named _total", replaced(kGood, "requests_total", "requests")},
      {"buckets not cumulative", replaced(kGood, "{le=\"1\"} 2", "{le=\"1\"} 0")},
      {"+Inf bucket is not the count",
       replaced(kGood, "latency_seconds_count 2", "latency_seconds_count 3")},
      {"no +Inf bucket", replaced(kGood, "latency_seconds_bucket{le=\"+Inf\"} 2\n", "")},
      {"duplicate series", replaced(kGood, "route=\"c\"", "route=\"a\\\"b\"")},
      {"bad escape", replaced(kGood, "a\\\"b", "a\\tb")},
      {"family interleaved", std::string(kGood) + "requests_total{route=\"d\"} 1\n"},
      {"value not a number", replaced(kGood, "up 1", "up one")},
      {"negative counter", replaced(kGood, "} 4", "} -4")},
  };
  for (const auto& [why, text] : broken)
    EXPECT_THROW(parse_exposition(text), std::runtime_error) << why << ":\n" << text;
}

}  // namespace
}  // namespace harness
