// Tool lists and grants: which computers a caller may use, which tools on each, and what
// bare POST /mcp means for it.
#include <algorithm>

#include "supervisor/config/messages.hpp"
#include "supervisor/config/rules.hpp"

namespace sb::config {
namespace {

constexpr std::string_view kWildcard = "*";

}  // namespace

ToolList build_tool_list(const std::vector<std::string>& items, std::string_view owner) {
  if (items.empty()) {
    fail(owner,
         "`tools` is empty: list the tool names this caller may use, or write [\"*\"] "
         "for every tool");
  }
  const bool has_wildcard = std::find(items.begin(), items.end(), kWildcard) != items.end();
  if (has_wildcard && items.size() > 1) {
    fail(owner,
         "`tools` mixes \"*\" with names: [\"*\"] already allows every tool; keep either "
         "[\"*\"] or the names");
  }
  ToolList out;
  if (has_wildcard) {
    out.all = true;
    return out;
  }
  for (const std::string& item : items) {
    const auto first = item.find_first_not_of(" \t\r\n\f\v");
    const auto last = item.find_last_not_of(" \t\r\n\f\v");
    out.names.insert(first == std::string::npos ? std::string()
                                                : item.substr(first, last - first + 1));
  }
  return out;
}

Grant build_computer_grant(const RawComputerTable& table, std::string_view owner) {
  if (table.empty()) {
    fail(owner,
         "`computers` is empty: name a computer and its tools, e.g. computers = { "
         "macmini = [\"sys_info\"] }, or write computers = { \"*\" = [\"*\"] } for every "
         "computer and tool");
  }
  Grant grant;
  if (table.contains(kWildcard)) {
    if (table.size() > 1) {
      fail(owner,
           "`computers` mixes \"*\" with computer names: \"*\" already reaches every "
           "computer; keep either { \"*\" = [...] } or the named entries");
    }
    grant.wildcard = true;
    grant.wildcard_tools =
        build_tool_list(table.begin()->second, std::string(owner) + " `computers.\"*\"`");
    return grant;
  }
  for (const auto& [computer, tools] : table) {
    const std::string entry_owner = std::string(owner) + " `computers." + computer + "`";
    check_computer_name(computer, entry_owner);
    grant.named.emplace(computer, build_tool_list(tools, entry_owner));
  }
  return grant;
}

// A named grant may only name computers that exist: otherwise a typo grants nothing today
// and pre-grants a computer configured under that name later.
void check_granted_computers_exist(const Grant& grant, const Config& config,
                                   std::string_view owner) {
  for (const auto& [computer, tools] : grant.named) {
    if (config.find_computer(computer)) continue;
    fail(owner, "`computers` names " + in_quotes(computer) +
                    ", which is not a configured [[computer]]: a computer given that name later "
                    "would inherit this grant; fix the name or add the [[computer]] block "
                    "(configured: " +
                    join(computer_names(config), ", ") + ")");
  }
}

// What bare POST /mcp means for this caller; it must never change when a computer is added.
std::string resolve_default_computer(const std::optional<std::string>& given, const Grant& grant,
                                     const Config& config, std::string_view owner) {
  if (given) {
    if (!config.find_computer(*given)) {
      fail(owner,
           "default_computer = " + in_quotes(*given) +
               " is not a configured computer; name one of: " + join(computer_names(config), ", "));
    }
    if (!grant.tools_for(*given)) {
      fail(owner, "default_computer = " + in_quotes(*given) +
                      " is not in this caller's `computers`: POST /mcp would resolve to a "
                      "computer it may not use; add it to `computers` or pick one it lists");
    }
    return *given;
  }
  if (grant.wildcard) {
    fail(owner,
         "`default_computer` is required: computers = { \"*\" = [...] } reaches every "
         "computer, including ones added later, so the meaning of POST /mcp must be "
         "pinned; add default_computer = " +
             in_quotes(config.computers.front().name) + " (or another computer)");
  }
  if (grant.named.size() == 1) return grant.named.begin()->first;
  std::vector<std::string> reachable;
  for (const auto& [computer, tools] : grant.named) reachable.push_back(in_quotes(computer));
  fail(owner, "`default_computer` is required: this caller can reach " +
                  std::to_string(reachable.size()) + " computers (" + join(reachable, ", ") +
                  "), so POST /mcp must name one; add default_computer = " + reachable.front());
}

}  // namespace sb::config
