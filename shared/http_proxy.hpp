// Dialling through an HTTP proxy (docs/connect.md, "Through a proxy"; the pods' dialer
// too, docs/configuration.md, "Pod attaches"): which proxy a URL goes through, from --proxy or
// the environment as curl reads it, the credentials it is given, and the CONNECT that opens the
// tunnel and the proxy's answer to it, read within bounds.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "shared/dial_target.hpp"

namespace sb {

// The proxy variables of the environment, as the process found them ("" when unset).
struct ProxyEnvironment {
  std::string https_proxy;  // https_proxy, else HTTPS_PROXY: for wss://
  std::string http_proxy;   // http_proxy (lowercase only, as curl reads it): for ws://
  std::string all_proxy;    // ALL_PROXY, else all_proxy: for either
  std::string no_proxy;     // NO_PROXY, else no_proxy
};

// Reads the variables above with getenv.
ProxyEnvironment proxy_environment();

// One proxy to go through: where it listens, and the Basic credentials it gets, from the
// user info of an environment variable's URL or (read before each dial) from a file.
struct ProxyRoute {
  std::string url;  // as configured, without its user info, for log lines
  DialTarget proxy;
  std::string credentials;  // user:password, from the environment's URL; "" for none
  std::filesystem::path credentials_file;
};

// The proxy the switchboard at `target` is dialled through, none (a direct dial), or what
// is wrong in a sentence. `configured` (--proxy, or proxy in the file) applies to every
// switchboard and may carry no user info; otherwise the environment's variable for the
// URL's scheme, unless NO_PROXY names the host or the host is loopback (a proxy elsewhere
// cannot reach this machine's loopback).
std::variant<std::optional<ProxyRoute>, std::string> route_for(
    const DialTarget& target, const std::string& configured, const ProxyEnvironment& environment,
    const std::filesystem::path& credentials_file);

// One proxy as a dial goes through it: where it listens, and the Proxy-Authorization it
// is sent ("" for none).
struct ProxyHop {
  DialTarget proxy;
  std::string authorization;
};

// The hop for `route`, its credentials read now (a file is read before every dial, so
// that a replaced one takes effect at the next); nothing, and `problem` set, when they
// cannot be read.
std::optional<ProxyHop> proxy_hop(const ProxyRoute& route, std::string& problem);

// Whether NO_PROXY's comma-separated `list` names `target`: `*`, a host name or a domain
// (with or without a leading dot: itself and everything under it), an IP address or a CIDR
// range, each optionally with `:port`.
bool no_proxy_names(std::string_view list, const DialTarget& target);

// The Proxy-Authorization value for `credentials` (user:password): Basic, Base64.
std::string basic_authorization(std::string_view credentials);

// The CONNECT request for `target`, with Proxy-Authorization when `authorization` is set.
std::string connect_request(const DialTarget& target, std::string_view authorization);

// The most of a proxy's answer to CONNECT that is read: its status line and headers.
inline constexpr std::size_t kMaxProxyAnswerBytes = 16 * 1024;

// What the proxy's answer to CONNECT says, from its head (status line and headers, up to
// and including the empty line): "" when the tunnel is open (2xx), else a sentence
// naming the refusal (407 asks for credentials, or refuses those given).
std::string tunnel_refusal(std::string_view head, bool sent_credentials);

}  // namespace sb
