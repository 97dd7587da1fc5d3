// Reading the exposition format one line at a time (exposition.hpp): the layout every line
// must have, and the tokens of a sample line (name, labels, value, timestamp) before any
// family is consulted; and the wording of the reader's messages. Used by exposition.cpp.
#pragma once

#include <limits>
#include <string>
#include <string_view>

#include "harness/exposition.hpp"

namespace harness {

inline constexpr double kInfinity = std::numeric_limits<double>::infinity();

// Throws std::runtime_error("line N: <what>").
[[noreturn]] void fail(int line, const std::string& what);
std::string in_quotes(std::string_view text);
std::string number_text(double value);
std::string series_text(std::string_view name, const Labels& labels);

bool is_metric_name(std::string_view text);
bool is_blank(char c);
double float_or_fail(std::string_view token, int line, const std::string& what);
void check_layout(std::string_view line, int number);
std::string_view first_token(std::string_view rest);
Sample read_sample(std::string_view line, int number);

}  // namespace harness
