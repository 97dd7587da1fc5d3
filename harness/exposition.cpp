#include "harness/exposition.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <utility>
#include <vector>

#include "harness/exposition_lines.hpp"

namespace harness {
namespace {

// One histogram series: the samples of a histogram sharing their labels apart from `le`.
struct HistogramSeries {
  int first_line = 0;
  std::optional<double> last_upper_bound;  // of the latest bucket, in the order written
  std::string last_le;                     // as written, for messages
  double last_bucket_count = 0;
  int last_bucket_line = 0;
  bool has_sum = false;
  std::optional<double> count;
  int count_line = 0;
};

// One summary series: the samples of a summary sharing their labels apart from `quantile`.
struct SummarySeries {
  int first_line = 0;
  bool has_sum = false;
  bool has_count = false;
};

// The family whose lines are being read. Only it can still take lines, as a family's lines
// must be consecutive, so only it needs the state of an unfinished check.
struct OpenFamily {
  std::size_t index = 0;  // into Exposition::families
  int first_line = 0;
  bool has_help = false;
  bool has_type = false;
  std::map<Labels, HistogramSeries> histograms;
  std::map<Labels, SummarySeries> summaries;
};

struct Reader {
  Exposition exposition;
  std::map<std::string, std::size_t, std::less<>> family_by_name;
  std::optional<OpenFamily> open;
  std::set<std::pair<std::string, Labels>> series;  // every (name, labels) seen
};

Family& family_of(Reader& reader, const OpenFamily& open) {
  return reader.exposition.families[open.index];
}

// The names a family's samples may have. Before its TYPE they are not known, so any name it
// could own counts, for the missing TYPE to be reported rather than a stranger sample.
std::vector<std::string> sample_names(const Family& family, bool has_type) {
  const std::string& name = family.name;
  if (!has_type) return {name, name + "_bucket", name + "_sum", name + "_count"};
  if (family.type == "histogram") return {name + "_bucket", name + "_sum", name + "_count"};
  if (family.type == "summary") return {name, name + "_sum", name + "_count"};
  return {name};
}

bool contains(const std::vector<std::string>& names, std::string_view name) {
  return std::ranges::find(names, name) != names.end();
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ", ") + in_quotes(name);
  return out;
}

void check_histogram_complete(const std::string& name, const Labels& labels,
                              const HistogramSeries& series) {
  const std::string histogram = "histogram " + series_text(name, labels);
  if (!series.last_upper_bound) fail(series.first_line, histogram + " has no buckets");
  if (*series.last_upper_bound != kInfinity) {
    fail(series.last_bucket_line,
         "the buckets of " + histogram + " end at le=\"" + series.last_le + "\", not le=\"+Inf\"");
  }
  if (!series.has_sum) fail(series.first_line, histogram + " has no _sum");
  if (!series.count) fail(series.first_line, histogram + " has no _count");
  if (*series.count != series.last_bucket_count) {
    fail(series.count_line, "_count of " + histogram + " is " + number_text(*series.count) +
                                " but its le=\"+Inf\" bucket is " +
                                number_text(series.last_bucket_count));
  }
}

void check_summary_complete(const std::string& name, const Labels& labels,
                            const SummarySeries& series) {
  const std::string summary = "summary " + series_text(name, labels);
  if (!series.has_sum) fail(series.first_line, summary + " has no _sum");
  if (!series.has_count) fail(series.first_line, summary + " has no _count");
}

// The checks that need all of a family's lines, once the next family starts or the text ends.
void close_family(Reader& reader) {
  if (!reader.open) return;
  const OpenFamily& open = *reader.open;
  const Family& family = family_of(reader, open);
  if (!open.has_help) fail(open.first_line, "family " + in_quotes(family.name) + " has no HELP");
  if (!open.has_type) fail(open.first_line, "family " + in_quotes(family.name) + " has no TYPE");
  for (const auto& [labels, series] : open.histograms) {
    check_histogram_complete(family.name, labels, series);
  }
  for (const auto& [labels, series] : open.summaries) {
    check_summary_complete(family.name, labels, series);
  }
  reader.open.reset();
}

// The family a HELP or TYPE line of `name` belongs to, started if it is new.
OpenFamily& family_to_declare(Reader& reader, const std::string& name, int number) {
  if (reader.open && family_of(reader, *reader.open).name == name) return *reader.open;
  if (reader.family_by_name.contains(name)) {
    fail(number, "family " + in_quotes(name) + " appears again after family " +
                     in_quotes(family_of(reader, *reader.open).name) + " started");
  }
  close_family(reader);
  reader.family_by_name.emplace(name, reader.exposition.families.size());
  reader.exposition.families.emplace_back().name = name;
  OpenFamily& open = reader.open.emplace();
  open.index = reader.exposition.families.size() - 1;
  open.first_line = number;
  return open;
}

std::string help_text_or_fail(std::string_view text, const std::string& name, int number) {
  std::string out;
  for (std::size_t at = 0; at < text.size(); ++at) {
    if (text[at] != '\\') {
      out += text[at];
      continue;
    }
    if (at + 1 == text.size()) fail(number, "HELP of " + in_quotes(name) + " ends in a backslash");
    const char escaped = text[++at];
    if (escaped == '\\') {
      out += '\\';
    } else if (escaped == 'n') {
      out += '\n';
    } else {
      fail(number, "HELP of " + in_quotes(name) + " has escape " +
                       in_quotes(text.substr(at - 1, 2)) + "; only \\\\ and \\n exist");
    }
  }
  return out;
}

void read_help(Reader& reader, std::string_view body, int number) {
  const std::string name(first_token(body));
  if (!is_metric_name(name)) fail(number, "invalid metric name " + in_quotes(name) + " in HELP");
  if (body.size() == name.size()) fail(number, "HELP of " + in_quotes(name) + " has no text");
  const std::string_view text = body.substr(name.size() + 1);
  if (body[name.size()] != ' ' || is_blank(text.front())) {
    fail(number, "HELP of " + in_quotes(name) + ": one space must separate name and text");
  }
  OpenFamily& open = family_to_declare(reader, name, number);
  // A HELP after the samples would be a second one: a sample needs the HELP before it.
  if (open.has_help) fail(number, "second HELP for " + in_quotes(name));
  open.has_help = true;
  family_of(reader, open).help = help_text_or_fail(text, name, number);
}

void read_type(Reader& reader, std::string_view body, int number) {
  const std::string name(first_token(body));
  if (!is_metric_name(name)) fail(number, "invalid metric name " + in_quotes(name) + " in TYPE");
  if (body.size() == name.size()) fail(number, "TYPE of " + in_quotes(name) + " names no type");
  const std::string_view type = body.substr(name.size() + 1);
  static constexpr std::array<std::string_view, 5> kTypes = {"counter", "gauge", "histogram",
                                                             "summary", "untyped"};
  if (body[name.size()] != ' ' || std::ranges::find(kTypes, type) == kTypes.end()) {
    fail(number, "unknown type " + in_quotes(type) + " for " + in_quotes(name) +
                     "; the types are counter, gauge, histogram, summary and untyped");
  }
  // The project names its counters as Prometheus' naming guide asks, so a rate() over them
  // reads right on every dashboard.
  if (type == "counter" && !name.ends_with("_total")) {
    fail(number, "counter " + in_quotes(name) + " is not named `..._total`");
  }
  OpenFamily& open = family_to_declare(reader, name, number);
  if (open.has_type) fail(number, "second TYPE for " + in_quotes(name));
  open.has_type = true;
  family_of(reader, open).type = type;
}

void read_comment(Reader& reader, std::string_view line, int number) {
  // Prometheus takes any comment whose first word is HELP or TYPE as one, however spaced;
  // here it must be written the one way, rather than pass as a plain comment or be misread.
  const std::string_view after_hash = line.substr(1);
  const std::size_t word_start = after_hash.find_first_not_of(" \t");
  if (word_start == std::string_view::npos) return;
  const std::string_view keyword = first_token(after_hash.substr(word_start));
  if (keyword != "HELP" && keyword != "TYPE") return;
  const std::string prefix = "# " + std::string(keyword) + " ";
  if (!line.starts_with(prefix) || line.size() == prefix.size() || line[prefix.size()] == ' ') {
    fail(number, "malformed " + std::string(keyword) + " line; its form is `# " +
                     std::string(keyword) + (keyword == "HELP" ? " name text`" : " name type`"));
  }
  if (keyword == "HELP") {
    read_help(reader, line.substr(prefix.size()), number);
  } else {
    read_type(reader, line.substr(prefix.size()), number);
  }
}

// The open family that owns a sample of this name; anything else is an error.
OpenFamily& family_of_sample(Reader& reader, const std::string& name, int number) {
  if (!reader.open) fail(number, "sample " + in_quotes(name) + " comes before any HELP and TYPE");
  OpenFamily& open = *reader.open;
  const Family& current = family_of(reader, open);
  const std::vector<std::string> names = sample_names(current, open.has_type);
  if (contains(names, name)) return open;
  for (const Family& earlier : reader.exposition.families) {
    if (&earlier != &current && contains(sample_names(earlier, true), name)) {
      fail(number, "sample " + in_quotes(name) + " of family " + in_quotes(earlier.name) +
                       " comes after family " + in_quotes(current.name) + " started");
    }
  }
  fail(number, "sample " + in_quotes(name) + " is none of the samples of " +
                   (open.has_type ? current.type : "family") + " " + in_quotes(current.name) +
                   " (" + joined(names) + "), and no HELP and TYPE of its own precede it");
}

// `labels` without `special` (le, quantile): the labels that tell a series apart.
std::pair<Labels, std::optional<std::string>> split_label(const Labels& labels,
                                                          const std::string& special) {
  Labels rest = labels;
  const auto found = rest.find(special);
  if (found == rest.end()) return {std::move(rest), std::nullopt};
  std::optional<std::string> value = std::move(found->second);
  rest.erase(found);
  return {std::move(rest), std::move(value)};
}

void check_histogram_sample(OpenFamily& open, const Family& family, const Sample& sample,
                            int number) {
  auto [labels, le] = split_label(sample.labels, "le");
  auto [entry, is_new] = open.histograms.try_emplace(std::move(labels));
  HistogramSeries& series = entry->second;
  if (is_new) series.first_line = number;
  const std::string series_name = series_text(sample.name, sample.labels);
  const bool is_bucket = sample.name == family.name + "_bucket";
  if (is_bucket && !le) fail(number, "bucket " + series_name + " has no `le` label");
  if (!is_bucket && le) fail(number, series_name + " has an `le` label, which only buckets have");
  if (sample.name == family.name + "_sum") {
    series.has_sum = true;
    return;
  }
  // _count and buckets count observations.
  if (!(sample.value >= 0)) {
    fail(number, series_name + " counts " + number_text(sample.value) + " observations");
  }
  if (!is_bucket) {
    series.count = sample.value;
    series.count_line = number;
    return;
  }
  const double upper_bound = float_or_fail(*le, number, "`le` label");
  if (std::isnan(upper_bound)) fail(number, "bucket " + series_name + " has le=\"NaN\"");
  if (series.last_upper_bound) {
    if (!(upper_bound > *series.last_upper_bound)) {
      fail(number, "bucket le=\"" + *le + "\" follows le=\"" + series.last_le +
                       "\"; buckets must ascend strictly");
    }
    if (sample.value < series.last_bucket_count) {
      fail(number, "bucket le=\"" + *le + "\" counts fewer than le=\"" + series.last_le +
                       "\" before it; bucket counts are cumulative");
    }
  }
  series.last_upper_bound = upper_bound;
  series.last_le = *le;
  series.last_bucket_count = sample.value;
  series.last_bucket_line = number;
}

void check_summary_sample(OpenFamily& open, const Family& family, const Sample& sample,
                          int number) {
  auto [labels, quantile] = split_label(sample.labels, "quantile");
  auto [entry, is_new] = open.summaries.try_emplace(std::move(labels));
  SummarySeries& series = entry->second;
  if (is_new) series.first_line = number;
  const std::string series_name = series_text(sample.name, sample.labels);
  const bool is_quantile = sample.name == family.name;
  if (is_quantile && !quantile) fail(number, series_name + " has no `quantile` label");
  if (!is_quantile && quantile) {
    fail(number, series_name + " has a `quantile` label, which only quantiles have");
  }
  if (is_quantile) {
    const double q = float_or_fail(*quantile, number, "`quantile` label");
    if (!(q >= 0 && q <= 1)) fail(number, series_name + ": a quantile lies in [0, 1]");
  } else if (sample.name == family.name + "_sum") {
    series.has_sum = true;
  } else {
    if (!(sample.value >= 0)) {
      fail(number, series_name + " counts " + number_text(sample.value) + " observations");
    }
    series.has_count = true;
  }
}

void add_sample(Reader& reader, Sample sample, int number) {
  OpenFamily& open = family_of_sample(reader, sample.name, number);
  Family& family = family_of(reader, open);
  if (!open.has_help) {
    fail(number, "sample " + in_quotes(sample.name) + " comes before the HELP of " +
                     in_quotes(family.name));
  }
  if (!open.has_type) {
    fail(number, "sample " + in_quotes(sample.name) + " comes before the TYPE of " +
                     in_quotes(family.name));
  }
  if (!reader.series.emplace(sample.name, sample.labels).second) {
    fail(number, "duplicate series " + series_text(sample.name, sample.labels));
  }
  if (family.type == "counter" && !(sample.value >= 0)) {
    // A counter starts at zero and only goes up; NaN fails `>= 0` too.
    fail(number, "counter " + series_text(sample.name, sample.labels) + " is " +
                     number_text(sample.value) + "; counters are >= 0");
  } else if (family.type == "histogram") {
    check_histogram_sample(open, family, sample, number);
  } else if (family.type == "summary") {
    check_summary_sample(open, family, sample, number);
  }
  family.samples.push_back(std::move(sample));
}

bool has_labels(const Sample& sample, const Labels& wanted) {
  return std::ranges::all_of(wanted, [&](const auto& label) {
    const auto found = sample.labels.find(label.first);
    return found != sample.labels.end() && found->second == label.second;
  });
}

}  // namespace

Exposition parse_exposition(std::string_view text) {
  if (text.empty()) fail(1, "the text is empty");
  if (!text.ends_with('\n')) {
    fail(static_cast<int>(std::ranges::count(text, '\n')) + 1,
         "the text does not end with \"\\n\"");
  }
  Reader reader;
  int number = 0;
  for (std::size_t start = 0; start < text.size();) {
    const std::size_t end = text.find('\n', start);
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++number;
    check_layout(line, number);
    if (line.front() == '#') {
      read_comment(reader, line, number);
    } else {
      add_sample(reader, read_sample(line, number), number);
    }
  }
  close_family(reader);
  return std::move(reader.exposition);
}

const Family* find_family(const Exposition& exposition, std::string_view name) {
  const auto found = std::ranges::find(exposition.families, name, &Family::name);
  return found == exposition.families.end() ? nullptr : &*found;
}

std::optional<double> sample_value(const Exposition& exposition, std::string_view name,
                                   const Labels& labels) {
  std::optional<double> value;
  int matches = 0;
  for (const Family& family : exposition.families) {
    for (const Sample& sample : family.samples) {
      if (sample.name != name || !has_labels(sample, labels)) continue;
      value = sample.value;
      ++matches;
    }
  }
  if (matches > 1) {
    throw std::runtime_error(std::to_string(matches) + " samples match " +
                             series_text(name, labels) + "; name more labels to pick one");
  }
  return value;
}

double sum_of(const Exposition& exposition, std::string_view name, const Labels& labels) {
  double sum = 0;
  for (const Family& family : exposition.families) {
    for (const Sample& sample : family.samples) {
      if (sample.name == name && has_labels(sample, labels)) sum += sample.value;
    }
  }
  return sum;
}

}  // namespace harness
