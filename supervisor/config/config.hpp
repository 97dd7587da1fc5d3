// The configuration model and its loader: every rule of docs/configuration.md. The loader
// is the only code that reads the file; everything else gets a validated Config.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "shared/dial_target.hpp"
#include "shared/verifier.hpp"

namespace sb::config {

inline constexpr int kDefaultMaxInflight = 8;
inline constexpr std::string_view kV1ComputerName = "default";

// An allowlist of names (tools, prompts): every name ("*") or a set of names. vm_status is
// always allowed on top of a tool list, by the caller of this type.
struct NameList {
  bool all = false;
  std::set<std::string, std::less<>> names;
  bool allows(std::string_view tool) const { return all || names.contains(tool); }
  bool any() const { return all || !names.empty(); }
  friend bool operator==(const NameList&, const NameList&) = default;
};

// The resources a caller may use: every one ("*") or those whose URI matches a pattern,
// in which `*` stands for any run of characters and everything else for itself.
struct UriPatterns {
  bool all = false;
  std::vector<std::string> patterns;
  bool allows(std::string_view uri) const;
  // Whether every URI an RFC 6570 template can expand to is allowed: each expression
  // (`{…}`) may become any text, and one pattern must match them all. A template that is
  // not well formed is not.
  bool allows_template(std::string_view uri_template) const;
  bool any() const { return all || !patterns.empty(); }
  friend bool operator==(const UriPatterns&, const UriPatterns&) = default;
};

// One kind of grant beside tools, per computer: none unless configured; "*" as the key
// covers every computer the caller's `computers` reaches.
template <class List>
struct PerComputer {
  std::optional<List> every;
  std::map<std::string, List, std::less<>> named;
  const List* find(std::string_view computer) const {
    if (every) return &*every;
    const auto found = named.find(computer);
    return found == named.end() ? nullptr : &found->second;
  }
  bool empty() const { return !every && named.empty(); }
  friend bool operator==(const PerComputer&, const PerComputer&) = default;
};

// What a grant's lookup found, or the empty list, which allows nothing.
template <class List>
List granted(const List* found) {
  return found ? *found : List{};
}

// Which computers a caller may use, and on each which tools, resources and prompts
// (docs/configuration.md, "Clients").
struct Grant {
  bool wildcard = false;    // computers = { "*" = [...] }: every computer, now and later
  NameList wildcard_tools;  // the tool list when wildcard
  std::map<std::string, NameList, std::less<>> named;  // computer name -> tools otherwise
  PerComputer<UriPatterns> resources;
  PerComputer<NameList> prompts;
  // The tool list for `computer`, or null when this grant does not reach it.
  const NameList* tools_for(std::string_view computer) const;
  // What the grant allows on `computer` besides tools, or null for nothing.
  const UriPatterns* resources_for(std::string_view computer) const;
  const NameList* prompts_for(std::string_view computer) const;
  friend bool operator==(const Grant&, const Grant&) = default;
};

struct Computer {
  std::string name;
  Verifier secret;
  int max_inflight = kDefaultMaxInflight;  // already resolved against the global default
  bool sole_caller = false;                // exactly one [[client]] or [[pty_attach]] can reach it
};

struct Client {
  std::string name;
  std::optional<Verifier> token;  // none: the caller signs in with OAuth only
  // Who an OAuth access token must name to be this caller (docs/auth.md): the value of its
  // issuer's identity claim, and that issuer ("" for neither).
  std::string oauth_issuer;
  std::string oauth_identity;
  Grant grant;
  std::string default_computer;     // always resolved
  std::optional<int> max_inflight;  // per-caller share on one computer
};

struct Pod {
  std::string name;
  std::string url;    // as written, for messages
  DialTarget target;  // parsed from it once, at load: what was checked is what is dialled
  std::filesystem::path secret_file;  // ~/ expanded
  std::string computer;               // always resolved
  NameList tools;
  std::optional<int> max_inflight;
  bool allow_insecure_transport = false;
  // The proxy the pod is dialled through (docs/configuration.md, "Pod attaches"): a
  // checked http:// or https:// URL, kProxyFromEnvironment, or "" to dial directly.
  std::string proxy;
  std::filesystem::path proxy_credentials_file;  // ~/ expanded; read before every dial
};

// `proxy = "environment"`: the service's https_proxy / http_proxy / ALL_PROXY and NO_PROXY.
inline constexpr std::string_view kProxyFromEnvironment = "environment";

struct Timeouts {
  int default_secs = 60;
  int control_secs = 15;
  int max_total_secs = 600;  // a call never runs longer, however much progress it reports
  int write_secs = 30;       // every write to a caller finishes within this, or it hangs up
  int idle_secs = 60;        // a keep-alive connection with no request for this long closes
  // A switch in place waits this long for each computer and caller to reach a point where
  // it can cross (docs/architecture.md, "Switching").
  int drain_secs = 10;
  // A call whose caller's event stream broke waits this long for the caller to resume it
  // (Last-Event-ID) before it is cancelled (docs/protocol.md, "Resumable streams").
  int resume_secs = 30;
  // A call with nothing to say for this long has its stream ended so that its caller polls
  // with Last-Event-ID; 0: never.
  int poll_secs = 0;
  std::map<std::string, int, std::less<>> tools{{"screenshot", 10}};
  int for_tool(std::string_view tool) const;
};

// What one process may hold, whatever its callers do (docs/robustness.md).
struct Limits {
  int max_connections = 4096;                           // HTTP connections open at once
  std::uint64_t max_request_bytes = 1024 * 1024;        // one request's body
  std::uint64_t max_reply_buffer_bytes = 512ull << 20;  // replies held for callers, in all
  std::uint64_t max_worker_buffer_bytes = 64ull << 20;  // what one worker holds for it
  int audit_unrelayed_per_minute = 20;  // call lines per caller and computer it did not relay
  int max_subscriptions = 64;           // resource subscriptions one caller holds at once
  int replay_events = 256;              // events kept per stream for a caller that resumes; 0: none
  int max_streams_per_caller = 32;      // streams of messages that belong to no call, per caller
};

// An address to listen on, as written without brackets.
struct ListenAddress {
  std::string ip;
  std::uint16_t port = 0;
  // "127.0.0.1:9790" or "[::1]:9790", IPv6 in its canonical form.
  std::string display() const;
  bool loopback() const;  // 127.0.0.0/8 or ::1
};

// An OAuth 2.1 authorization server whose access tokens callers may sign in with
// (docs/auth.md, "Configuration").
struct OAuthIssuer {
  std::string issuer;                   // its identifier, exactly as tokens' `iss`
  std::string jwks_url;                 // "": found through its metadata (RFC 8414, OIDC)
  std::vector<std::string> algorithms;  // of RS256, PS256, ES256, EdDSA
  int clock_skew_secs = 60;
  std::string identity_claim = "sub";
  // Opaque tokens checked at the issuer (RFC 7662): its introspection endpoint, and a file
  // holding the switchboard's own `client_id:client_secret` there; "" and empty: none.
  std::string introspection_url;
  std::filesystem::path introspection_credentials_file;
};

struct OAuth {
  std::string resource;             // the switchboard's public URL: resource and audience
  std::vector<std::string> scopes;  // each required of every token; none: no scope check
  std::vector<OAuthIssuer> issuers;
};

// [telemetry]: OpenTelemetry traces exported over OTLP/HTTP (docs/observability.md).
struct Telemetry {
  std::string endpoint;  // the OTLP/HTTP base URL; spans go to endpoint + "/v1/traces"
  // Lines `Name: value` sent with every export (a collector's API key); none when empty.
  std::filesystem::path headers_file;
  double sample_ratio = 1.0;      // of the traces the switchboard starts
  int max_sampled_per_sec = 100;  // a caller's sampled flag honoured up to this rate
  std::chrono::milliseconds batch_delay{1000};
  int max_queue_spans = 2048;
  bool audit_logs = false;  // each audit line also an OTLP log record
};

struct Config {
  std::string listen_ip = "127.0.0.1";  // as written, without brackets
  std::uint16_t listen_port = 8790;
  bool allow_insecure_bind = false;
  int max_inflight = kDefaultMaxInflight;
  bool audit_args = true;
  std::optional<std::filesystem::path> audit_path;      // none: audit lines go to stdout
  std::optional<std::filesystem::path> control_socket;  // this project's key; see below
  // Where /metrics and the status page are served; none: not served (docs/metrics.md).
  std::optional<ListenAddress> metrics_listen;
  // Browser origins allowed besides loopback ones, exactly as a browser sends them.
  std::vector<std::string> allowed_origins;
  // Whether Tailscale-User-Login and X-Forwarded-For name the peer in the audit: true when
  // only a trusted proxy (tailscale serve) can reach the listener.
  bool trust_peer_headers = true;
  Timeouts timeouts;
  Limits limits;
  std::vector<Computer> computers;  // config order
  std::vector<Client> clients;      // config order
  std::vector<Pod> pods;
  std::optional<OAuth> oauth;          // none: static tokens only
  std::optional<Telemetry> telemetry;  // none: no traces
  bool v1_form = false;                // the file used [vm]

  // "127.0.0.1:8790" or "[::1]:8790".
  std::string listen_display() const;
  // Where `serve` listens for `switchboard workers`: control_socket, or a default derived
  // from the listen port.
  std::filesystem::path control_socket_path() const;
  const Computer* find_computer(std::string_view name) const;
  // Config order; docs/configuration.md, "Derived settings".
  std::vector<std::string> wildcard_clients() const;
  std::vector<std::string> unused_computers() const;
};

// A load or validation failure. what() is the whole chain, "in <path>: <owner>: <problem>".
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Parses and validates TOML text. `home` expands a leading "~/" (empty: HOME unset).
Config parse_config(std::string_view toml_text, std::string_view home);

// Reads and parses a file; errors are prefixed "in <path>: " or "reading <path>: ".
Config load_config_file(const std::filesystem::path& path, std::string_view home);

// The result of `check`: warnings and notes for stderr, the summary line for stdout.
struct CheckReport {
  std::vector<std::string> stderr_lines;
  std::string summary;
};
CheckReport check_report(const Config& config);

}  // namespace sb::config
