// Tool lists and grants: which computers a caller may use, which tools, resources and
// prompts on each, and what bare POST /mcp means for it.
#include <algorithm>

#include "shared/text.hpp"
#include "supervisor/config/messages.hpp"
#include "supervisor/config/rules.hpp"

namespace sb::config {
namespace {

constexpr std::string_view kWildcard = "*";

}  // namespace

// "*" alone, or a non-empty list without it: the rule of every list in a grant.
bool check_wildcard_alone(const std::vector<std::string>& items, std::string_view owner,
                          std::string_view key, std::string_view noun, std::string_view item) {
  if (items.empty()) {
    fail(owner, "`" + std::string(key) + "` is empty: list the " + std::string(item) +
                    "s this caller may use, or write [\"*\"] for every " + std::string(noun));
  }
  const bool has_wildcard = std::find(items.begin(), items.end(), kWildcard) != items.end();
  if (has_wildcard && items.size() > 1) {
    // "mixes "*" with names" is the reference's wording for a list of names, which
    // operators' scripts may look for.
    const std::string_view mixed = item.ends_with(" name") ? "names" : item;
    std::string message = "`" + std::string(key) + "` mixes \"*\" with ";
    message.append(mixed).append(mixed == item ? "s" : "");
    message += ": [\"*\"] already allows every " + std::string(noun) +
               "; keep either [\"*\"] or the " + std::string(item) + "s";
    fail(owner, message);
  }
  return has_wildcard;
}

NameList build_name_list(const std::vector<std::string>& items, std::string_view owner,
                         std::string_view key, std::string_view noun) {
  const bool has_wildcard =
      check_wildcard_alone(items, owner, key, noun, std::string(noun) + " name");
  NameList out;
  if (has_wildcard) {
    out.all = true;
    return out;
  }
  for (const std::string& item : items) out.names.insert(std::string(trim(item)));
  return out;
}

UriPatterns build_uri_patterns(const std::vector<std::string>& items, std::string_view owner) {
  UriPatterns out;
  if (check_wildcard_alone(items, owner, "resources", "resource", "URI pattern")) {
    out.all = true;
    return out;
  }
  for (const std::string& item : items) {
    const bool clean = !item.empty() && std::none_of(item.begin(), item.end(), [](char c) {
      return static_cast<unsigned char>(c) <= ' ' || c == 0x7f;
    });
    if (!clean) {
      fail(owner, "URI pattern " + in_quotes(item) +
                      " is empty or holds a space or control character, which no resource URI "
                      "has; write the URI, with * for any run of characters, e.g. "
                      "\"file:///srv/reports/*\"");
    }
    out.patterns.push_back(item);
  }
  return out;
}

// `resources` or `prompts`: per computer the caller's `computers` reaches, or "*" for all
// of them; never a computer it cannot use, which would widen nothing today and mislead.
template <class List, class BuildList>
PerComputer<List> build_per_computer(const RawComputerTable& table, const Grant& grant,
                                     const Config& config, std::string_view owner,
                                     std::string_view key, BuildList build_list) {
  const std::string key_text(key);
  if (table.empty()) {
    fail(owner, "`" + key_text +
                    "` is empty: name a computer and what it grants there, or leave "
                    "`" +
                    key_text + "` out for none");
  }
  PerComputer<List> out;
  if (table.contains(kWildcard)) {
    if (table.size() > 1) {
      fail(owner, "`" + key_text +
                      "` mixes \"*\" with computer names: \"*\" already covers "
                      "every computer this caller reaches; keep either { \"*\" = [...] } or "
                      "the named entries");
    }
    out.every = build_list(table.begin()->second, std::string(owner) + " `" + key_text + ".\"*\"`");
    return out;
  }
  for (const auto& [computer, items] : table) {
    const std::string entry_owner = std::string(owner) + " `" + key_text + "." + computer + "`";
    check_computer_name(computer, entry_owner);
    if (!config.find_computer(computer) || !grant.tools_for(computer)) {
      fail(entry_owner, in_quotes(computer) +
                            " is not a computer this caller's `computers` reaches; grant the "
                            "computer in `computers` first, or fix the name");
    }
    out.named.emplace(computer, build_list(items, entry_owner));
  }
  return out;
}

NameList build_tool_list(const std::vector<std::string>& items, std::string_view owner) {
  return build_name_list(items, owner, "tools", "tool");
}

void add_resources_and_prompts(const RawClient& block, const Config& config, Grant& grant,
                               std::string_view owner) {
  if (block.resources) {
    grant.resources = build_per_computer<UriPatterns>(*block.resources, grant, config, owner,
                                                      "resources", build_uri_patterns);
  }
  if (block.prompts) {
    grant.prompts = build_per_computer<NameList>(
        *block.prompts, grant, config, owner, "prompts",
        [](const std::vector<std::string>& items, std::string_view entry_owner) {
          return build_name_list(items, entry_owner, "prompts", "prompt");
        });
  }
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
