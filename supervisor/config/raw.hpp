// What the first pass makes of the document: its blocks as plain structs, typed but not yet
// checked against any rule (rules.hpp builds the Config from them).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sb::config {

struct RawComputer {
  std::string name;
  std::string secret;
  std::optional<std::int64_t> max_inflight;
};

using RawComputerTable = std::map<std::string, std::vector<std::string>, std::less<>>;

struct RawClient {
  std::string name;
  std::optional<std::string> token;
  std::optional<std::string> oauth_identity;
  std::optional<std::string> oauth_issuer;
  std::optional<std::vector<std::string>> tools;
  std::optional<RawComputerTable> computers;
  std::optional<RawComputerTable> resources;
  std::optional<RawComputerTable> prompts;
  std::optional<std::string> default_computer;
  std::optional<std::int64_t> max_inflight;
};

struct RawPod {
  std::string name;
  std::string url;
  std::string secret_file;
  std::vector<std::string> tools;
  std::optional<std::string> computer;
  std::optional<std::int64_t> max_inflight;
  bool allow_insecure_transport = false;
  std::optional<std::string> proxy;
  std::optional<std::string> proxy_credentials_file;
};

struct RawTimeouts {
  std::optional<std::int64_t> default_secs;
  std::optional<std::int64_t> control_secs;
  std::optional<std::int64_t> max_total_secs;
  std::optional<std::int64_t> write_secs;
  std::optional<std::int64_t> idle_secs;
  std::optional<std::int64_t> drain_secs;
  std::optional<std::int64_t> resume_secs;
  std::optional<std::int64_t> poll_secs;
  std::map<std::string, std::int64_t, std::less<>> tools;  // ascending key order
};

struct RawLimits {
  std::optional<std::int64_t> max_connections;
  std::optional<std::int64_t> max_request_bytes;
  std::optional<std::int64_t> max_reply_buffer_mib;
  std::optional<std::int64_t> max_worker_buffer_mib;
  std::optional<std::int64_t> audit_unrelayed_per_minute;
  std::optional<std::int64_t> max_subscriptions;
  std::optional<std::int64_t> replay_events;
  std::optional<std::int64_t> max_streams_per_caller;
};

struct RawIssuer {
  std::string issuer;
  std::optional<std::string> jwks_url;
  std::optional<std::vector<std::string>> algorithms;
  std::optional<std::int64_t> clock_skew_secs;
  std::optional<std::string> identity_claim;
  std::optional<std::string> introspection_url;
  std::optional<std::string> introspection_credentials_file;
};

struct RawOAuth {
  std::string resource;
  std::optional<std::vector<std::string>> scopes;
  std::vector<RawIssuer> issuers;
};

struct RawTelemetry {
  std::string endpoint;
  std::optional<std::string> headers_file;
  std::optional<double> sample_ratio;
  std::optional<std::int64_t> max_sampled_per_sec;
  std::optional<std::int64_t> batch_delay_ms;
  std::optional<std::int64_t> max_queue_spans;
  std::optional<bool> audit_logs;
};

struct RawFile {
  std::optional<std::string> listen;
  std::optional<bool> trust_peer_headers;
  bool allow_insecure_bind = false;
  std::optional<std::int64_t> max_inflight;
  bool audit_args = true;
  std::optional<std::string> audit_path;
  std::optional<std::string> control_socket;
  std::optional<std::string> metrics_listen;
  std::optional<std::vector<std::string>> allowed_origins;
  std::optional<std::string> vm_secret;  // set when the file has [vm]
  std::optional<std::string> pty_attach_proxy;
  std::vector<RawComputer> computers;
  RawTimeouts timeouts;
  RawLimits limits;
  std::vector<RawClient> clients;
  std::vector<RawPod> pods;
  std::optional<RawOAuth> oauth;
  std::optional<RawTelemetry> telemetry;
};

// The TOML layer (decode.cpp): syntax, unknown keys, types and missing required keys fail
// here, each message with the line and column at fault.
RawFile decode_toml(std::string_view toml_text);

}  // namespace sb::config
