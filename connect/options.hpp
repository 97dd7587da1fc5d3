// switchboard-connect's settings: from the command line, or from a TOML file (`-c FILE`,
// one per computer under /etc/switchboard/connect/) with the command line winning
// (docs/connect.md). The secret itself is never an option: only the file that holds it.
#pragma once

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "shared/dial_target.hpp"
#include "shared/http_proxy.hpp"

namespace sb::connect {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// One switchboard to attach to.
struct SwitchboardUrl {
  std::string url;                  // as written, for log lines
  DialTarget target;                // parsed once, checked against the transport rule
  std::optional<ProxyRoute> proxy;  // the proxy it is dialled through (choose_proxies)
};

struct Options {
  std::vector<SwitchboardUrl> urls;   // one link each (docs/connect.md, "Twins")
  std::filesystem::path secret_file;  // read again before every dial; "" with:
  // No Authorization of its own: a gateway on the path (the proxy) adds it
  // (docs/connect.md, "The secret added by a gateway").
  bool gateway_adds_secret = false;
  std::vector<std::string> command;    // the MCP server: program and arguments, or
  std::optional<DialTarget> upstream;  // a Streamable HTTP MCP endpoint on this machine
  std::string name;                    // in log lines; default: the program's file name
  bool allow_insecure_transport = false;
  std::string proxy;                             // --proxy; "" for the environment's
  std::filesystem::path proxy_credentials_file;  // user:password, read before every dial
  std::filesystem::path ca_file;  // authorities trusted besides the system's, for wss://
  bool help = false;
  bool version = false;
};

// Throws UsageError with a sentence naming what is wrong. `credentials_directory`:
// $CREDENTIALS_DIRECTORY, where systemd puts the secret when no file is named.
Options parse_options(const std::vector<std::string>& words, const std::string& home,
                      const std::string& credentials_directory);

// Whether TLS is needed at all: a switchboard dialled over wss://, or through an https://
// proxy (known once choose_proxies has run).
bool any_tls(const Options& options);

// Picks each switchboard's proxy (route_for, proxy.hpp): the configured one, or the
// environment's. Throws UsageError with what is wrong, when a gateway is to add the secret
// on a way that has no proxy, and for --ca-file where nothing uses TLS.
void choose_proxies(Options& options, const ProxyEnvironment& environment);

extern const char* const kUsage;

}  // namespace sb::connect
