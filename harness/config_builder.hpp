// The TOML of a switchboard config, built key by key for a test or a benchmark, and the
// secrets its computers and clients present.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace harness {

// A secret as `switchboard gen-secret` makes one (64 hex chars) and its verifier.
struct Secret {
  std::string secret;
  std::string verifier;  // "sha256:<hex of SHA-256 over the secret's text>"
};
Secret new_secret();
std::string verifier_of(const std::string& secret);

// `text` as a TOML basic string, quoted and escaped.
std::string toml_string(const std::string& text);

// Builds the TOML of a config. listen, audit_path and control_socket are added by
// SwitchboardProcess; everything else comes from here.
class ConfigBuilder {
 public:
  ConfigBuilder();
  // A top-level key with its TOML value as written, e.g. set("max_inflight", "2").
  ConfigBuilder& set(std::string key, std::string toml_value);
  ConfigBuilder& timeouts(int default_secs, int control_secs, std::map<std::string, int> tools);
  // `[timeouts] max_total_secs`: how long a call may run, progress or not.
  ConfigBuilder& max_total_secs(int secs) { return timeout_setting("max_total_secs", secs); }
  // Any other `[timeouts]` key, e.g. timeout_setting("write_secs", 1).
  ConfigBuilder& timeout_setting(std::string key, int secs);
  // The top-level `allowed_origins = [...]`: browser origins besides loopback ones.
  ConfigBuilder& allowed_origins(const std::vector<std::string>& origins);
  ConfigBuilder& vm(const Secret& secret);  // the v1 form
  ConfigBuilder& computer(std::string name, const Secret& secret,
                          std::optional<int> max_inflight = {});
  // `computers_toml` is the inline table as written: R"({ "*" = ["*"] })".
  ConfigBuilder& client(std::string name, const Secret& token, std::string computers_toml,
                        std::optional<std::string> default_computer = {},
                        std::optional<int> max_inflight = {});
  // One more key of the last client, its TOML value as written: client_key("resources",
  // R"({ alpha = ["*"] })").
  ConfigBuilder& client_key(const std::string& key, const std::string& toml_value);
  // The v1 form: `tools = [...]`.
  ConfigBuilder& client_v1(std::string name, const Secret& token, std::vector<std::string> tools,
                           std::optional<int> max_inflight = {});
  // Any other table, appended verbatim after the clients (e.g. a [[pty_attach]] block).
  ConfigBuilder& block(std::string toml_table);
  std::string toml() const;

 private:
  std::vector<std::string> top_;
  int default_secs_ = 0;
  int control_secs_ = 0;
  std::map<std::string, int> tool_timeouts_;
  std::map<std::string, int> timeout_settings_;
  std::vector<std::string> computers_;
  std::vector<std::string> clients_;
  std::vector<std::string> blocks_;
};

}  // namespace harness
