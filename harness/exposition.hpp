// A strict reader of the Prometheus text exposition format (version 0.0.4), so tests and the
// bench can hold /metrics to what Prometheus ingests without running Prometheus. It accepts only
// the one canonical layout client libraries write, which Prometheus also accepts; it is stricter
// than Prometheus in that layout (one space between tokens, no leading or trailing
// whitespace, no blank lines, no `{}` and no trailing comma in labels, lowercase types,
// values written in decimal or as NaN, +Inf, -Inf) and in the project's rules: every family
// has exactly one HELP (with text) and one TYPE before its samples, its lines are
// consecutive, and a counter is named `..._total`. Histograms and summaries must be
// complete and consistent (buckets ascending and cumulative up to le="+Inf", which equals
// _count; _sum and _count present).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace harness {

using Labels = std::map<std::string, std::string>;

struct Sample {
  std::string name;  // as written: a histogram's are `<family>_bucket`, `_sum` and `_count`
  Labels labels;     // values unescaped; `le` and `quantile` included
  double value = 0;
  std::optional<std::int64_t> timestamp_ms;
};

struct Family {
  std::string name;
  std::string help;             // unescaped
  std::string type;             // counter, gauge, histogram, summary or untyped
  std::vector<Sample> samples;  // in the order written
};

struct Exposition {
  std::vector<Family> families;  // in the order written
};

// The families and samples of `text`. Throws std::runtime_error("line N: <what is wrong>")
// at the first violation; a family-wide one (a missing _sum, say) names the family's line.
Exposition parse_exposition(std::string_view text);

// The family of that name, or nullptr.
const Family* find_family(const Exposition& exposition, std::string_view name);

// The value of the one sample named `name` whose labels include all of `labels`; nullopt
// when there is none. Throws std::runtime_error when more than one matches, since a test
// reading "the" value of an ambiguous series would otherwise pass or fail by accident.
std::optional<double> sample_value(const Exposition& exposition, std::string_view name,
                                   const Labels& labels = {});

// The sum of every sample named `name` whose labels include all of `labels` (0 when none):
// a total across the series the test does not care to tell apart.
double sum_of(const Exposition& exposition, std::string_view name, const Labels& labels = {});

}  // namespace harness
