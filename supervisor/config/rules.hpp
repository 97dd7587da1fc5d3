// The second pass: the steps that build a Config from the raw file, which load.cpp runs in
// one fixed order, and the checks several of them share.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "supervisor/config/config.hpp"
#include "supervisor/config/raw.hpp"

namespace sb::config {

// Shared by several blocks (checks.cpp).
void check_principal_name(std::string_view name, std::string_view owner);
void check_computer_name(std::string_view name, std::string_view owner);
int checked_max_inflight(std::int64_t value, std::string_view owner, std::string_view meaning);
Verifier checked_verifier(std::string_view text, std::string_view context);

// Top-level settings (settings.cpp).
void apply_listen(const RawFile& raw, Config& config);
std::optional<ListenAddress> build_metrics_listen(const RawFile& raw);
Timeouts build_timeouts(const RawTimeouts& raw);
Limits build_limits(const RawLimits& raw);
std::vector<std::string> build_allowed_origins(const RawFile& raw);
std::optional<std::filesystem::path> build_control_socket(const RawFile& raw,
                                                          std::string_view home);

// Computers (computers.cpp).
void build_computers(const RawFile& raw, Config& config);
// Every configured computer's name, quoted, for messages that list them.
std::vector<std::string> computer_names(const Config& config);
void mark_sole_callers(Config& config);

// Tool lists and grants (grants.cpp).
NameList build_tool_list(const std::vector<std::string>& items, std::string_view owner);
Grant build_computer_grant(const RawComputerTable& table, std::string_view owner);
// A client's `resources` and `prompts`, into `grant` once its computers are known.
void add_resources_and_prompts(const RawClient& block, const Config& config, Grant& grant,
                               std::string_view owner);
void check_granted_computers_exist(const Grant& grant, const Config& config,
                                   std::string_view owner);
std::string resolve_default_computer(const std::optional<std::string>& given, const Grant& grant,
                                     const Config& config, std::string_view owner);

// A URL the supervisor's outbound client is sent to (outbound_url.cpp): an https:// URL
// (http:// only to a loopback host, for a test or a local server), without a fragment or a
// query; `what` names the key in the message.
std::string checked_outbound_url(const std::string& url, std::string_view owner,
                                 std::string_view what);

// [telemetry] (telemetry.cpp): where spans are exported, and how many.
void build_telemetry(const RawFile& raw, Config& config, std::string_view home);

// [oauth] (oauth.cpp), before the clients that name its issuers.
void build_oauth(const RawFile& raw, Config& config, std::string_view home);

// Callers (clients.cpp, pods.cpp): pods after clients, whose names they may not take.
void build_clients(const RawFile& raw, Config& config);
void build_pods(const RawFile& raw, Config& config, std::string_view home);

}  // namespace sb::config
