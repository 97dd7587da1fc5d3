// [[pty_attach]] blocks: the pods the switchboard dials and the computer each is lent.
#include <algorithm>
#include <utility>
#include <variant>

#include "shared/http_proxy.hpp"
#include "shared/text.hpp"
#include "supervisor/config/messages.hpp"
#include "supervisor/config/rules.hpp"

namespace sb::config {
namespace {

// The URL is parsed here once, and what this checks is what the dialer dials.
DialTarget checked_pod_target(const RawPod& block, const Config& config, std::string_view owner) {
  auto parsed = parse_dial_target(block.url);
  if (auto* problem = std::get_if<std::string>(&parsed)) {
    fail(owner, "`url` " + *problem + "; write it as wss://<host>/tools/attach/<session>");
  }
  DialTarget target = std::move(std::get<DialTarget>(parsed));
  if (!target.tls && !target.loopback && !block.allow_insecure_transport) {
    fail(owner, "`url` = " + in_quotes(block.url) +
                    ": ws:// to a non-loopback host sends the attach secret in clear; use "
                    "wss://, or set allow_insecure_transport = true (acceptable over a "
                    "tailnet IP)");
  }
  for (const Pod& earlier : config.pods) {
    if (earlier.target != target) continue;
    fail(owner, "`url` " + in_quotes(block.url) + " is already dialled by [[pty_attach]] " +
                    in_quotes(earlier.name) +
                    ": two dialers on one session evict each other; give each attach its own "
                    "session URL");
  }
  return target;
}

// The block's `proxy`, else the top-level `pty_attach_proxy`, else none: never the
// service's environment unless one of them says "environment". A URL is checked here as
// the dialer will use it (credentials only from a file, never in the URL).
std::string checked_pod_proxy(const RawPod& block, const RawFile& raw, const DialTarget& target,
                              std::string_view owner) {
  const std::string proxy = block.proxy.value_or(raw.pty_attach_proxy.value_or(""));
  if (block.proxy_credentials_file && proxy.empty())
    fail(owner,
         "`proxy_credentials_file` is set but no proxy is: add proxy = \"http://HOST:PORT\"");
  if (proxy.empty() || proxy == kProxyFromEnvironment) return proxy;
  const auto route = route_for(target, proxy, {}, {});
  if (const auto* problem = std::get_if<std::string>(&route)) {
    fail(owner, std::string(block.proxy ? "`proxy`" : "`pty_attach_proxy`") + ": " + *problem +
                    "; write http://HOST:PORT, https://HOST:PORT or \"environment\"");
  }
  return proxy;
}

std::string resolve_pod_computer(const RawPod& block, const Config& config,
                                 std::string_view owner) {
  if (block.computer) {
    if (config.find_computer(*block.computer)) return *block.computer;
    fail(owner,
         "computer = " + in_quotes(*block.computer) +
             " is not a configured computer; name one of: " + join(computer_names(config), ", "));
  }
  if (config.computers.size() == 1) return config.computers.front().name;
  fail(owner, "`computer` is required: " + std::to_string(config.computers.size()) +
                  " computers are configured (" + join(computer_names(config), ", ") +
                  "); add computer = " + in_quotes(config.computers.front().name) +
                  " (or another) to say which one this attach lends");
}

}  // namespace

void build_pods(const RawFile& raw, Config& config, std::string_view home) {
  for (const RawPod& block : raw.pods) {
    const std::string owner = block_owner("[[pty_attach]]", block.name);
    check_principal_name(block.name, owner);
    const auto same_name = [&](const auto& other) { return other.name == block.name; };
    if (std::any_of(config.clients.begin(), config.clients.end(), same_name) ||
        std::any_of(config.pods.begin(), config.pods.end(), same_name)) {
      fail(owner, "name " + in_quotes(block.name) +
                      " is already used by a client or attach; clients and pty attaches share "
                      "one namespace, give this attach its own name");
    }
    Pod attach;
    attach.target = checked_pod_target(block, config, owner);
    attach.name = block.name;
    attach.url = block.url;
    attach.computer = resolve_pod_computer(block, config, owner);
    attach.tools = build_tool_list(block.tools, owner);
    if (block.max_inflight) {
      attach.max_inflight =
          checked_max_inflight(*block.max_inflight, owner, "this attach's share of its computer");
    }
    // Not read here: the dialer re-reads it on every dial, and `check` warns about it.
    attach.secret_file = expand_home(block.secret_file, home);
    attach.allow_insecure_transport = block.allow_insecure_transport;
    attach.proxy = checked_pod_proxy(block, raw, attach.target, owner);
    if (block.proxy_credentials_file)
      attach.proxy_credentials_file = expand_home(*block.proxy_credentials_file, home);
    config.pods.push_back(std::move(attach));
  }
  if (config.clients.empty() && config.pods.empty()) {
    fail("",
         "nothing could ever call a computer: add a [[client]] (name, token_sha256, "
         "computers) or a [[pty_attach]]");
  }
}

}  // namespace sb::config
