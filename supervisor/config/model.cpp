// The model's helpers: what the rest of the switchboard asks of a loaded Config.
#include "supervisor/config/config.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <optional>
#include <string>

#include "shared/text.hpp"
#include "supervisor/config/addresses.hpp"

namespace sb::config {
namespace {

// The principals that may use computers, as grants: clients and pods alike. An
// attach's grant is named, so it only ever counts as naming its own computer.
bool grant_names(const Grant& grant, std::string_view computer) {
  return grant.named.contains(computer);
}

}  // namespace

const NameList* Grant::tools_for(std::string_view computer) const {
  if (wildcard) return &wildcard_tools;
  const auto found = named.find(computer);
  return found == named.end() ? nullptr : &found->second;
}

const UriPatterns* Grant::resources_for(std::string_view computer) const {
  return tools_for(computer) ? resources.find(computer) : nullptr;
}

const NameList* Grant::prompts_for(std::string_view computer) const {
  return tools_for(computer) ? prompts.find(computer) : nullptr;
}

bool UriPatterns::allows(std::string_view uri) const {
  if (all) return true;
  return std::any_of(patterns.begin(), patterns.end(),
                     [uri](const std::string& pattern) { return glob_matches(pattern, uri); });
}

namespace {

// The URIs `uri_template` can expand to, as a `*` pattern; nothing for a brace unmatched.
std::optional<std::string> template_as_glob(std::string_view uri_template) {
  std::string glob;
  for (std::size_t at = 0; at < uri_template.size(); ++at) {
    const char c = uri_template[at];
    if (c == '}') return std::nullopt;
    if (c != '{') {
      glob.push_back(c);
      continue;
    }
    const auto close = uri_template.find_first_of("{}", at + 1);
    if (close == std::string_view::npos || uri_template[close] != '}') return std::nullopt;
    glob.push_back('*');
    at = close;
  }
  return glob;
}

}  // namespace

bool UriPatterns::allows_template(std::string_view uri_template) const {
  if (all) return true;
  const auto glob = template_as_glob(uri_template);
  return glob && std::any_of(patterns.begin(), patterns.end(), [&](const std::string& pattern) {
           return glob_includes(pattern, *glob);
         });
}

int Timeouts::for_tool(std::string_view tool) const {
  const auto found = tools.find(tool);
  return found == tools.end() ? default_secs : found->second;
}

std::string ListenAddress::display() const {
  if (ip.find(':') == std::string::npos) return ip + ":" + std::to_string(port);
  // Printed in the canonical form ("[::1]"), whatever spelling the file used.
  in6_addr address{};
  char text[INET6_ADDRSTRLEN] = {};
  const bool ok = inet_pton(AF_INET6, ip.c_str(), &address) == 1 &&
                  inet_ntop(AF_INET6, &address, text, sizeof text) != nullptr;
  return "[" + (ok ? std::string(text) : ip) + "]:" + std::to_string(port);
}

bool ListenAddress::loopback() const {
  return is_loopback_ip(ip);
}

std::string Config::listen_display() const {
  return ListenAddress{listen_ip, listen_port}.display();
}

std::filesystem::path Config::control_socket_path() const {
  if (control_socket) return *control_socket;
  return "/tmp/switchboard-" + std::to_string(listen_port) + ".sock";
}

const Computer* Config::find_computer(std::string_view name) const {
  for (const Computer& computer : computers) {
    if (computer.name == name) return &computer;
  }
  return nullptr;
}

std::vector<std::string> Config::wildcard_clients() const {
  std::vector<std::string> names;
  for (const Client& client : clients) {
    if (client.grant.wildcard) names.push_back(client.name);
  }
  return names;
}

std::vector<std::string> Config::unused_computers() const {
  // Attaches never hold a wildcard grant, so only clients can make every computer used.
  if (!wildcard_clients().empty()) return {};
  std::vector<std::string> unused;
  for (const Computer& computer : computers) {
    const bool by_client = std::any_of(clients.begin(), clients.end(), [&](const Client& c) {
      return grant_names(c.grant, computer.name);
    });
    const bool by_attach = std::any_of(pods.begin(), pods.end(),
                                       [&](const Pod& a) { return a.computer == computer.name; });
    if (!by_client && !by_attach) unused.push_back(computer.name);
  }
  return unused;
}

}  // namespace sb::config
