// How the loader frames its messages (docs/protocol.md, "Decisions"): each names the block
// and the key at fault, with any name in it quoted so that an odd one stays unambiguous.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace sb::config {

std::string in_quotes(std::string_view text);
std::string block_owner(std::string_view block, std::string_view name);
// Throws ConfigError.
[[noreturn]] void fail(std::string_view owner, std::string_view problem);
std::string join(const std::vector<std::string>& items, std::string_view separator);

}  // namespace sb::config
