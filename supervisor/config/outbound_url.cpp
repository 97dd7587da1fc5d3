// The URLs the supervisor's outbound client is sent to ([oauth] issuers, [telemetry]'s
// collector): https://, or http:// to a loopback host.
#include "supervisor/config/messages.hpp"
#include "supervisor/config/rules.hpp"

namespace sb::config {
namespace {

bool loopback_host(std::string_view rest) {
  for (std::string_view host : {"127.0.0.1", "localhost", "[::1]"}) {
    if (rest.starts_with(host) &&
        (rest.size() == host.size() || rest[host.size()] == ':' || rest[host.size()] == '/'))
      return true;
  }
  return false;
}

}  // namespace

std::string checked_outbound_url(const std::string& url, std::string_view owner,
                                 std::string_view what) {
  const bool secure = url.starts_with("https://");
  const bool local = url.starts_with("http://") && loopback_host(url.substr(7));
  if (!secure && !local) {
    fail(owner, std::string(what) + " " + in_quotes(url) +
                    " is not an https:// URL (http:// only to 127.0.0.1, localhost or [::1])");
  }
  const std::size_t host_at = secure ? 8 : 7;
  if (url.size() <= host_at || url[host_at] == '/' ||
      url.find_first_of("?# \t") != std::string::npos)
    fail(owner,
         std::string(what) + " " + in_quotes(url) + " needs a host, and no query or fragment");
  return url;
}

}  // namespace sb::config
