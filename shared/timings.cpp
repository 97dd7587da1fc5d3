#include "shared/timings.hpp"

#include <charconv>
#include <cstdlib>
#include <stdexcept>
#include <utility>

#include "shared/log.hpp"

namespace sb {

std::optional<Timings> parse_timings(std::string_view text, std::string& error) {
  Timings timings;
  const std::pair<std::string_view, std::chrono::milliseconds Timings::*> names[] = {
      {"handshake", &Timings::handshake},       {"ping_interval", &Timings::ping_interval},
      {"heartbeat", &Timings::heartbeat},       {"heartbeat_stale", &Timings::heartbeat_stale},
      {"stall_kill", &Timings::stall_kill},     {"audit_window", &Timings::audit_window},
      {"dial_ping", &Timings::dial_ping},       {"dial_silence", &Timings::dial_silence},
      {"dial_backoff", &Timings::dial_backoff}, {"dial_unauthorized", &Timings::dial_unauthorized},
      {"server_grace", &Timings::server_grace}, {"request_read", &Timings::request_read},
      {"lingering", &Timings::lingering},       {"backstop_grace", &Timings::backstop_grace},
      {"jwks_refetch", &Timings::jwks_refetch},
  };
  if (text.empty()) return timings;
  for (bool last = false; !last;) {
    const auto comma = text.find(',');
    last = comma == std::string_view::npos;
    const std::string_view item = text.substr(0, comma);
    if (!last) text.remove_prefix(comma + 1);
    const auto equals = item.find('=');
    const std::string_view name = item.substr(0, equals);
    const std::string_view value =
        equals == std::string_view::npos ? std::string_view() : item.substr(equals + 1);
    long long milliseconds = 0;
    const auto [end, status] =
        std::from_chars(value.data(), value.data() + value.size(), milliseconds);
    if (value.empty() || status != std::errc() || end != value.data() + value.size() ||
        milliseconds <= 0 || milliseconds > 3'600'000) {
      error.clear();
      error.push_back('"');
      error.append(item.data(), item.size());
      error.append("\" is not name=milliseconds (1 to 3600000)");
      return std::nullopt;
    }
    bool known = false;
    for (const auto& [known_name, member] : names) {
      if (known_name != name) continue;
      timings.*member = std::chrono::milliseconds(milliseconds);
      known = true;
    }
    if (!known) {
      error = "no timing is called \"";
      error.append(name.data(), name.size());
      error.push_back('"');
      return std::nullopt;
    }
  }
  return timings;
}

Timings timings_from_environment() {
  const char* text = std::getenv("SWITCHBOARD_TEST_TIMINGS");
  if (!text) return {};
  std::string error;
  const auto timings = parse_timings(text, error);
  if (!timings) throw std::runtime_error("SWITCHBOARD_TEST_TIMINGS: " + error);
  log_warn("test timings in effect (SWITCHBOARD_TEST_TIMINGS)", {{"timings", text}});
  return *timings;
}

}  // namespace sb
