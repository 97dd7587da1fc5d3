// The top-level settings: listeners, timeouts, limits, origins, the control socket.
#include <sys/un.h>

#include "shared/text.hpp"
#include "supervisor/config/addresses.hpp"
#include "supervisor/config/messages.hpp"
#include "supervisor/config/rules.hpp"

namespace sb::config {
namespace {

constexpr std::int64_t kTimeoutLimitSecs = 600;
constexpr std::int64_t kMaxTotalLimitSecs = 86400;
constexpr std::int64_t kMaxDrainSecs = 300;

int checked_timeout(std::int64_t value, std::string_view owner, std::string_view key) {
  if (value >= 1 && value <= kTimeoutLimitSecs) return static_cast<int>(value);
  fail(owner, "`" + std::string(key) + "` must be 1..=600 seconds, got " + std::to_string(value));
}

std::int64_t checked_limit(std::optional<std::int64_t> value, std::int64_t fallback,
                           std::string_view key, std::int64_t low, std::int64_t high) {
  if (!value) return fallback;
  if (*value >= low && *value <= high) return *value;
  fail("[limits]", "`" + std::string(key) + "` must be " + std::to_string(low) +
                       "..=" + std::to_string(high) + ", got " + std::to_string(*value));
}

}  // namespace

void apply_listen(const RawFile& raw, Config& config) {
  const std::string text = raw.listen.value_or("127.0.0.1:8790");
  const auto address = parse_socket_address(text);
  if (!address) {
    fail("",
         "`listen` must be ip:port, such as \"127.0.0.1:8790\" or \"[::1]:8790\" (a host "
         "name such as localhost:8790 is not accepted), got " +
             in_quotes(text));
  }
  config.listen_ip = address->ip;
  config.listen_port = address->port;
  config.allow_insecure_bind = raw.allow_insecure_bind;
  if (is_loopback_ip(address->ip) || raw.allow_insecure_bind) return;
  fail("", "listen = " + in_quotes(text) +
               " is not a loopback address: callers would send bearer tokens in clear to "
               "anything that can reach it. Keep listen on 127.0.0.1 and front it with "
               "`tailscale serve` or a tunnel, or set `allow_insecure_bind = true` to accept "
               "bearer tokens in clear on a private network");
}

// The metrics listener carries no secret, but it tells whoever reaches it which computers
// exist and who calls them: loopback too, unless the operator opened `listen` as well.
std::optional<ListenAddress> build_metrics_listen(const RawFile& raw) {
  if (!raw.metrics_listen) return std::nullopt;
  const auto address = parse_socket_address(*raw.metrics_listen);
  if (!address) {
    fail("",
         "`metrics_listen` must be ip:port, such as \"127.0.0.1:9790\" or \"[::1]:9790\", got " +
             in_quotes(*raw.metrics_listen));
  }
  if (!is_loopback_ip(address->ip) && !raw.allow_insecure_bind) {
    fail("", "metrics_listen = " + in_quotes(*raw.metrics_listen) +
                 " is not a loopback address: it would show every computer and caller name to "
                 "anything that can reach it. Keep it on 127.0.0.1 (scrape it from the same "
                 "machine or through a tunnel), or set `allow_insecure_bind = true`");
  }
  return ListenAddress{address->ip, address->port};
}

Timeouts build_timeouts(const RawTimeouts& raw) {
  Timeouts out;
  if (raw.default_secs)
    out.default_secs = checked_timeout(*raw.default_secs, "[timeouts]", "default_secs");
  if (raw.control_secs)
    out.control_secs = checked_timeout(*raw.control_secs, "[timeouts]", "control_secs");
  if (raw.max_total_secs) {
    if (*raw.max_total_secs < 1 || *raw.max_total_secs > kMaxTotalLimitSecs) {
      fail("[timeouts]", "`max_total_secs` must be 1..=86400 seconds, got " +
                             std::to_string(*raw.max_total_secs));
    }
    out.max_total_secs = static_cast<int>(*raw.max_total_secs);
  }
  if (raw.write_secs) out.write_secs = checked_timeout(*raw.write_secs, "[timeouts]", "write_secs");
  if (raw.idle_secs) out.idle_secs = checked_timeout(*raw.idle_secs, "[timeouts]", "idle_secs");
  if (raw.drain_secs) {
    if (*raw.drain_secs < 1 || *raw.drain_secs > kMaxDrainSecs) {
      fail("[timeouts]",
           "`drain_secs` must be 1..=300 seconds, got " + std::to_string(*raw.drain_secs));
    }
    out.drain_secs = static_cast<int>(*raw.drain_secs);
  }
  if (raw.resume_secs)
    out.resume_secs = checked_timeout(*raw.resume_secs, "[timeouts]", "resume_secs");
  if (raw.poll_secs) {
    if (*raw.poll_secs < 0 || *raw.poll_secs > kTimeoutLimitSecs) {
      fail("[timeouts]",
           "`poll_secs` must be 0..=600 seconds (0: never), got " + std::to_string(*raw.poll_secs));
    }
    out.poll_secs = static_cast<int>(*raw.poll_secs);
  }
  for (const auto& [tool, secs] : raw.tools) {
    // User entries are added to the built-in screenshot entry, or override it.
    out.tools[tool] = checked_timeout(secs, "[timeouts.tools]", tool);
  }
  return out;
}

// The bounds keep a typo from disabling a limit: a reply may be 16 MiB, so the reply
// budget holds at least one; a request over 64 MiB is no tool call.
Limits build_limits(const RawLimits& raw) {
  const Limits defaults;
  Limits out;
  out.max_connections = static_cast<int>(
      checked_limit(raw.max_connections, defaults.max_connections, "max_connections", 8, 1 << 20));
  out.max_request_bytes = static_cast<std::uint64_t>(
      checked_limit(raw.max_request_bytes, static_cast<std::int64_t>(defaults.max_request_bytes),
                    "max_request_bytes", 1024, 64 << 20));
  out.max_reply_buffer_bytes = static_cast<std::uint64_t>(checked_limit(
                                   raw.max_reply_buffer_mib,
                                   static_cast<std::int64_t>(defaults.max_reply_buffer_bytes >> 20),
                                   "max_reply_buffer_mib", 16, 1 << 20))
                               << 20;
  out.max_worker_buffer_bytes =
      static_cast<std::uint64_t>(
          checked_limit(raw.max_worker_buffer_mib,
                        static_cast<std::int64_t>(defaults.max_worker_buffer_bytes >> 20),
                        "max_worker_buffer_mib", 1, 1 << 20))
      << 20;
  out.audit_unrelayed_per_minute = static_cast<int>(
      checked_limit(raw.audit_unrelayed_per_minute, defaults.audit_unrelayed_per_minute,
                    "audit_unrelayed_per_minute", 0, 1'000'000));
  out.max_subscriptions = static_cast<int>(checked_limit(
      raw.max_subscriptions, defaults.max_subscriptions, "max_subscriptions", 1, 4096));
  out.replay_events = static_cast<int>(
      checked_limit(raw.replay_events, defaults.replay_events, "replay_events", 0, 4096));
  out.max_streams_per_caller =
      static_cast<int>(checked_limit(raw.max_streams_per_caller, defaults.max_streams_per_caller,
                                     "max_streams_per_caller", 1, 4096));
  return out;
}

// An origin as a browser sends it: scheme, host and an optional port, nothing more, so
// that the exact comparison a request gets cannot be fooled by a path or a trailing slash.
std::vector<std::string> build_allowed_origins(const RawFile& raw) {
  if (!raw.allowed_origins) return {};
  for (const std::string& origin : *raw.allowed_origins) {
    const bool http = origin.starts_with("http://");
    const bool https = origin.starts_with("https://");
    const std::string_view authority = std::string_view(origin).substr(http    ? 7
                                                                       : https ? 8
                                                                               : origin.size());
    if ((!http && !https) || authority.empty() ||
        authority.find_first_of("/?#@ \t") != std::string_view::npos) {
      fail("",
           "`allowed_origins` entries must be origins such as \"https://app.example\" or "
           "\"http://app.example:8080\" (scheme, host, optional port; no path), got " +
               in_quotes(origin));
    }
  }
  return *raw.allowed_origins;
}

// Our own key: where `serve` answers `switchboard workers`.
std::optional<std::filesystem::path> build_control_socket(const RawFile& raw,
                                                          std::string_view home) {
  if (!raw.control_socket) return std::nullopt;
  if (raw.control_socket->empty()) {
    fail("",
         "`control_socket` is empty: give a path such as \"~/.local/state/switchboard.sock\", "
         "or remove the key to use /tmp/switchboard-<port>.sock");
  }
  auto path = expand_home(*raw.control_socket, home);
  constexpr std::size_t kLimit = sizeof(sockaddr_un{}.sun_path) - 1;
  if (path.native().size() > kLimit) {
    fail("", "`control_socket` " + in_quotes(path.native()) + " is longer than " +
                 std::to_string(kLimit) +
                 " bytes, the limit for a Unix socket path; choose a shorter path");
  }
  return path;
}

}  // namespace sb::config
