// Fuzz target: what switchboard-connect makes of a proxy and of the environment that names
// one (shared/http_proxy.hpp): a proxy's answer to CONNECT (tunnel_refusal), and a NO_PROXY
// list and a proxy URL from the environment (no_proxy_names, route_for).
//
// Input: a control byte (bit 0: credentials were sent), then the proxy's answer, a NUL,
// and the environment's text (used as NO_PROXY and as https_proxy). Checked: a refusal is
// printable ASCII and bounded whatever the proxy said; a usable route's host is not
// empty; an unusable one is one of a few fixed sentences, never the environment's URL.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_check.hpp"
#include "shared/http_proxy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const bool sent_credentials = (data[0] & 1) != 0;
  const std::string input(reinterpret_cast<const char*>(data) + 1, size - 1);
  const auto nul = input.find('\0');
  const std::string answer = input.substr(0, nul);
  const std::string environment = nul == std::string::npos ? "" : input.substr(nul + 1);

  const std::string refusal = sb::tunnel_refusal(answer, sent_credentials);
  FUZZ_CHECK(refusal.size() <= 200);
  for (const char c : refusal) FUZZ_CHECK(c >= 0x20 && c < 0x7f);

  static const sb::DialTarget target =
      std::get<sb::DialTarget>(sb::parse_dial_target("wss://sb.example.com:8443/vm/attach"));
  sb::no_proxy_names(environment, target);
  const auto route =
      sb::route_for(target, "", sb::ProxyEnvironment{.https_proxy = environment}, {});
  if (const auto* chosen = std::get_if<std::optional<sb::ProxyRoute>>(&route)) {
    if (*chosen) FUZZ_CHECK(!(*chosen)->proxy.host.empty());
  } else {
    // One of a few fixed sentences, never the URL itself (it may hold a password).
    const std::string& problem = std::get<std::string>(route);
    FUZZ_CHECK(problem.rfind("the proxy the environment names: ", 0) == 0);
    FUZZ_CHECK(problem.size() < 100);
  }
  return 0;
}
