#include "connect/options.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <optional>

#include "shared/text.hpp"

namespace sb::connect {

const char* const kUsage =
    R"(usage: switchboard-connect [-c FILE] [--url URL] [--secret-file FILE] [--name NAME]
                           [--allow-insecure-transport]
                           [--proxy http(s)://HOST:PORT] [--proxy-credentials-file FILE]
                           [--ca-file FILE] [--gateway-adds-secret]
                           (--upstream http://127.0.0.1:PORT/mcp | -- COMMAND [ARGS...])

Runs COMMAND, an MCP server speaking stdio (one JSON-RPC message per line), or talks to a
local Streamable HTTP MCP server at --upstream, and attaches it to a switchboard as a
computer: dials URL (wss://host/vm/attach) with the secret in FILE and relays every
message both ways until stopped.

  -c FILE                     settings from a TOML file: url (or urls, an array),
                              secret_file, name, command (an array: program and
                              arguments) or upstream, allow_insecure_transport, proxy,
                              proxy_credentials_file, ca_file, gateway_adds_secret; the
                              command line wins over it
  --url URL                   the switchboard's attach URL, ws:// or wss://; repeated,
                              one attach to each switchboard at once, one MCP server
  --secret-file FILE          the computer's secret, read again before every dial
                              (default under systemd: $CREDENTIALS_DIRECTORY/secret)
  --name NAME                 the computer's name in log lines (default: the program's)
  --allow-insecure-transport  allow ws:// to a host that is not loopback
  --upstream URL              a Streamable HTTP MCP endpoint on this machine (http://,
                              loopback), instead of a command
  --proxy URL                 dial every switchboard through this http:// or https://
                              proxy (CONNECT);
                              without it, https_proxy / http_proxy / ALL_PROXY and
                              NO_PROXY as curl reads them, never for a loopback host
  --proxy-credentials-file FILE
                              user:password for the proxy (Basic), read before every dial
  --ca-file FILE              certificate authorities (PEM) trusted for wss:// and an
                              https:// proxy besides the system's, e.g. a TLS-inspecting
                              gateway's
  --gateway-adds-secret       send no secret: the proxy, a gateway that inspects TLS, adds
                              the Authorization header (wss:// through a proxy only; no
                              --secret-file then)
  -h, --help / -V, --version

Exit status: 0 when stopped (SIGTERM, SIGINT), 2 on a usage error, 3 when a newer attach
with the same secret replaced this one (close 4002), 4 when the switchboard no longer
accepts the secret (close 4003), once every link has stopped (the last one's); 1 on any
other fatal error.
)";

namespace {

// What the TOML file says; each key optional.
struct FileSettings {
  std::optional<std::vector<std::string>> urls;
  std::optional<std::string> secret_file;
  std::optional<std::string> name;
  std::optional<std::vector<std::string>> command;
  std::optional<std::string> upstream;
  std::optional<bool> allow_insecure_transport;
  std::optional<std::string> proxy;
  std::optional<std::string> proxy_credentials_file;
  std::optional<std::string> ca_file;
  std::optional<bool> gateway_adds_secret;
};

FileSettings read_file(const std::string& path) {
  toml::table table;
  try {
    table = toml::parse_file(path);
  } catch (const toml::parse_error& error) {
    throw UsageError(path + ": " + std::string(error.description()));
  }
  FileSettings settings;
  for (const auto& entry : table) {
    const std::string name(entry.first.str());
    const toml::node& node = entry.second;
    auto text = [&]() -> std::string {
      if (!node.is_string()) throw UsageError(path + ": " + name + " must be a string");
      return *node.value<std::string>();
    };
    auto flag = [&]() -> bool {
      if (!node.is_boolean()) throw UsageError(path + ": " + name + " must be true or false");
      return *node.value<bool>();
    };
    auto texts = [&]() -> std::vector<std::string> {
      const toml::array* items = node.as_array();
      if (!items) throw UsageError(path + ": " + name + " must be an array of strings");
      std::vector<std::string> values;
      for (const auto& item : *items) {
        if (!item.is_string())
          throw UsageError(path + ": " + name + " must be an array of strings");
        values.push_back(*item.value<std::string>());
      }
      return values;
    };
    if (name == "url" || name == "urls") {
      if (settings.urls) throw UsageError(path + ": give url or urls, not both");
      settings.urls = name == "url" ? std::vector<std::string>{text()} : texts();
    } else if (name == "secret_file") {
      settings.secret_file = text();
    } else if (name == "name") {
      settings.name = text();
    } else if (name == "upstream") {
      settings.upstream = text();
    } else if (name == "allow_insecure_transport") {
      settings.allow_insecure_transport = flag();
    } else if (name == "gateway_adds_secret") {
      settings.gateway_adds_secret = flag();
    } else if (name == "command") {
      settings.command = texts();
    } else if (name == "proxy") {
      settings.proxy = text();
    } else if (name == "proxy_credentials_file") {
      settings.proxy_credentials_file = text();
    } else if (name == "ca_file") {
      settings.ca_file = text();
    } else {
      throw UsageError(path + ": unknown key `" + name + "`");
    }
  }
  return settings;
}

SwitchboardUrl switchboard_url(const std::string& url, const Options& options) {
  auto parsed = parse_dial_target(url);
  if (auto* problem = std::get_if<std::string>(&parsed)) throw UsageError("url " + *problem);
  SwitchboardUrl where{.url = url, .target = std::get<DialTarget>(parsed)};
  if (!where.target.tls && !where.target.loopback && !options.allow_insecure_transport)
    throw UsageError("url " + url +
                     ": ws:// sends the secret in clear; use wss://, or a loopback host, or "
                     "--allow-insecure-transport");
  for (const SwitchboardUrl& earlier : options.urls) {
    if (earlier.target == where.target)
      throw UsageError("url " + url + " names the same switchboard as " + earlier.url);
  }
  return where;
}

}  // namespace

Options parse_options(const std::vector<std::string>& words, const std::string& home,
                      const std::string& credentials_directory) {
  Options options;
  std::optional<std::string> config_file, secret_file, name, upstream, proxy, proxy_credentials,
      ca_file;
  std::vector<std::string> urls;
  std::optional<std::vector<std::string>> command;
  bool allow_insecure = false;
  bool gateway_adds_secret = false;
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string& word = words[i];
    auto value = [&]() -> std::string {
      if (i + 1 == words.size()) throw UsageError(word + " needs a value");
      return words[++i];
    };
    if (word == "--") {
      command.emplace(words.begin() + static_cast<long>(i) + 1, words.end());
      break;
    }
    if (word == "-h" || word == "--help") {
      options.help = true;
    } else if (word == "-V" || word == "--version") {
      options.version = true;
    } else if (word == "-c" || word == "--config") {
      config_file = value();
    } else if (word == "--url") {
      urls.push_back(value());
    } else if (word == "--secret-file") {
      secret_file = value();
    } else if (word == "--name") {
      name = value();
    } else if (word == "--upstream") {
      upstream = value();
    } else if (word == "--allow-insecure-transport") {
      allow_insecure = true;
    } else if (word == "--gateway-adds-secret") {
      gateway_adds_secret = true;
    } else if (word == "--proxy") {
      proxy = value();
    } else if (word == "--proxy-credentials-file") {
      proxy_credentials = value();
    } else if (word == "--ca-file") {
      ca_file = value();
    } else {
      throw UsageError("unexpected argument `" + word + "` (the server's command goes after --)");
    }
  }
  if (options.help || options.version) return options;

  const FileSettings file = config_file ? read_file(*config_file) : FileSettings{};
  if (urls.empty()) urls = file.urls.value_or(std::vector<std::string>{});
  std::string secret = secret_file.value_or(file.secret_file.value_or(""));
  options.gateway_adds_secret = gateway_adds_secret || file.gateway_adds_secret.value_or(false);
  if (options.gateway_adds_secret && !secret.empty())
    throw UsageError("give --secret-file or --gateway-adds-secret, not both");
  // Under systemd the unit hands the secret over as a credential (LoadCredential=secret:…).
  if (secret.empty() && !credentials_directory.empty() && !options.gateway_adds_secret)
    secret = credentials_directory + "/secret";
  options.command =
      command && !command->empty() ? *command : file.command.value_or(std::vector<std::string>{});
  options.allow_insecure_transport =
      allow_insecure || file.allow_insecure_transport.value_or(false);
  if (urls.empty()) throw UsageError("--url (or url in the file) is required");
  if (secret.empty() && !options.gateway_adds_secret)
    throw UsageError("--secret-file (or secret_file in the file) is required");
  const std::string upstream_url = upstream.value_or(file.upstream.value_or(""));
  if (!upstream_url.empty() && !options.command.empty())
    throw UsageError("give the MCP server as a command or as --upstream, not both");
  if (!upstream_url.empty()) {
    auto target = parse_dial_target(upstream_url, UrlKind::kHttp);
    if (auto* problem = std::get_if<std::string>(&target)) throw UsageError("upstream " + *problem);
    options.upstream = std::get<DialTarget>(target);
    if (options.upstream->tls || !options.upstream->loopback)
      throw UsageError("upstream " + upstream_url +
                       ": only a server on this machine, at an http:// loopback URL");
  } else if (options.command.empty() || options.command.front().empty()) {
    throw UsageError(
        "the MCP server's command is required: -- COMMAND [ARGS...] (or --upstream URL)");
  }

  for (const std::string& url : urls) options.urls.push_back(switchboard_url(url, options));
  if (!secret.empty()) options.secret_file = expand_home(secret, home);
  options.proxy = proxy.value_or(file.proxy.value_or(""));
  const std::string credentials =
      proxy_credentials.value_or(file.proxy_credentials_file.value_or(""));
  if (!credentials.empty()) options.proxy_credentials_file = expand_home(credentials, home);
  const std::string authorities = ca_file.value_or(file.ca_file.value_or(""));
  if (!authorities.empty()) options.ca_file = expand_home(authorities, home);
  const std::string program =
      options.upstream ? std::string("upstream")
                       : std::filesystem::path(options.command.front()).filename().string();
  options.name = name.value_or(file.name.value_or(program));
  return options;
}

bool any_tls(const Options& options) {
  return std::any_of(options.urls.begin(), options.urls.end(), [](const SwitchboardUrl& url) {
    return url.target.tls || (url.proxy && url.proxy->proxy.tls);
  });
}

void choose_proxies(Options& options, const ProxyEnvironment& environment) {
  for (SwitchboardUrl& url : options.urls) {
    auto route = route_for(url.target, options.proxy, environment, options.proxy_credentials_file);
    if (auto* problem = std::get_if<std::string>(&route)) throw UsageError(*problem);
    url.proxy = std::move(std::get<std::optional<ProxyRoute>>(route));
    // An attach without a secret may only leave inside TLS, toward the gateway that adds
    // it: never in clear, never straight to the switchboard.
    if (options.gateway_adds_secret && (!url.target.tls || !url.proxy))
      throw UsageError("url " + url.url +
                       ": --gateway-adds-secret needs wss:// through a proxy (--proxy, or the "
                       "environment's), the gateway that adds the secret");
  }
  if (!options.ca_file.empty() && !any_tls(options))
    throw UsageError("--ca-file is for wss:// switchboards and https:// proxies, and none is used");
}

}  // namespace sb::connect
