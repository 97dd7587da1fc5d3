// Fuzz target: the config loader (supervisor/config/config.hpp), which reads a file an operator
// edits by hand and `switchboard check` reads before anything else.
//
// Input: the file's text. The loader must either return a Config that keeps the rules it
// enforces, or throw ConfigError with a message; any other exception, a crash or a hang is a
// finding. A file that loads is also put through what `check` and `serve` do with it next.
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.hpp"
#include "supervisor/config/config.hpp"

namespace {

using sb::config::Config;

bool in_range(int value, int low, int high) {
  return value >= low && value <= high;
}

void check_loaded(const Config& config) {
  FUZZ_CHECK(!config.computers.empty());
  FUZZ_CHECK(!config.clients.empty() || !config.pods.empty());
  FUZZ_CHECK(in_range(config.max_inflight, 1, 64));
  for (std::size_t i = 0; i < config.computers.size(); ++i) {
    const auto& computer = config.computers[i];
    FUZZ_CHECK(!computer.name.empty() && computer.name.size() <= 64);
    FUZZ_CHECK(in_range(computer.max_inflight, 1, 64));
    // Names and secrets are unique: the secret alone selects the computer.
    FUZZ_CHECK(config.find_computer(computer.name) == &computer);
    for (std::size_t j = 0; j < i; ++j) FUZZ_CHECK(config.computers[j].secret != computer.secret);
  }
  for (const auto& client : config.clients) {
    FUZZ_CHECK(!client.name.empty() && client.name.size() <= 64);
    // Bare POST /mcp always means a computer that exists and that this caller may use.
    FUZZ_CHECK(config.find_computer(client.default_computer) != nullptr);
    FUZZ_CHECK(client.grant.tools_for(client.default_computer) != nullptr);
    for (const auto& [name, tools] : client.grant.named) {
      FUZZ_CHECK(config.find_computer(name) != nullptr);
    }
    if (client.max_inflight) FUZZ_CHECK(in_range(*client.max_inflight, 1, 64));
    // A client's token is nobody else's secret.
    for (const auto& computer : config.computers) FUZZ_CHECK(computer.secret != client.token);
    for (const auto& other : config.clients) {
      FUZZ_CHECK(&other == &client || other.token != client.token);
    }
  }
  for (const auto& attach : config.pods) {
    FUZZ_CHECK(config.find_computer(attach.computer) != nullptr);
    // What was checked is what is dialled: the stored target is the URL's one parse, a
    // clear-text one goes to loopback unless allowed, and no two attaches dial one target.
    const auto reparsed = sb::parse_dial_target(attach.url);
    FUZZ_CHECK(std::holds_alternative<sb::DialTarget>(reparsed) &&
               std::get<sb::DialTarget>(reparsed) == attach.target);
    FUZZ_CHECK(attach.target.tls || attach.target.loopback || attach.allow_insecure_transport);
    for (const auto& other : config.pods) {
      FUZZ_CHECK(&other == &attach || other.target != attach.target);
    }
    if (attach.max_inflight) FUZZ_CHECK(in_range(*attach.max_inflight, 1, 64));
    for (const auto& client : config.clients) FUZZ_CHECK(client.name != attach.name);
  }
  FUZZ_CHECK(in_range(config.timeouts.default_secs, 1, 600));
  FUZZ_CHECK(in_range(config.timeouts.control_secs, 1, 600));
  FUZZ_CHECK(in_range(config.timeouts.max_total_secs, 1, 86400));
  for (const auto& [tool, secs] : config.timeouts.tools) {
    FUZZ_CHECK(config.timeouts.for_tool(tool) == secs);
  }

  // What `check` prints and what `serve` derives at start.
  const auto report = sb::config::check_report(config);
  FUZZ_CHECK(!report.summary.empty());
  FUZZ_CHECK(!config.listen_display().empty());
  FUZZ_CHECK(!config.control_socket_path().empty());
  (void)config.wildcard_clients();
  (void)config.unused_computers();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  // Half the inputs as if HOME were unset: "~/" then expands differently.
  const std::string_view home = size % 2 == 0 ? "/home/fuzz" : "";
  std::optional<Config> config;
  try {
    config = sb::config::parse_config(text, home);
  } catch (const sb::config::ConfigError& error) {
    FUZZ_CHECK(std::string_view(error.what()).size() > 0);
    return 0;
  } catch (const std::exception& error) {
    // Anything but ConfigError escapes `switchboard check` and `serve` unexplained.
    std::fprintf(stderr, "parse_config threw a non-ConfigError: %s\n", error.what());
    __builtin_trap();
  }
  check_loaded(*config);
  return 0;
}
